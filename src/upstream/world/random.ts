/**
 * Hashing and small PRNGs. Every value of the world is a pure function of (seed, kind, index,
 * field), so no entity ever has to be stored to be found again.
 */

export const fmix32 = (x: number): number => {
  let h = x | 0
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

export const hashString = (s: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return fmix32(h)
}

/** Indices may exceed 32 bits (forum comment keys), so the high part is folded in separately. */
export const hash2 = (a: number, b: number): number => {
  const hi = Math.floor(b / 4294967296)
  return fmix32(fmix32(a ^ 0x9e3779b9) + fmix32((b >>> 0) + Math.imul(hi, 0x27d4eb2f)))
}

export const hash3 = (a: number, b: number, c: number): number =>
  fmix32(hash2(a, b) + Math.imul(c + 1, 0x61c88647))

/** Uniform in [0, 1) from a 32-bit hash. */
export const unit = (h: number): number => h / 4294967296

export const u3 = (a: number, b: number, c: number): number => unit(hash3(a, b, c))

/** Heavy-tailed (Pareto) integer with minimum `min`; smaller `alpha` means a fatter tail. */
export const pareto = (u: number, min: number, alpha: number, cap: number): number =>
  Math.min(cap, Math.floor(min / (1 - u) ** (1 / alpha)))

/** mulberry32: for the long, cheap streams of an entity's text and minor fields. */
export class Rng {
  private s: number
  constructor(seed: number) {
    this.s = seed | 0
  }
  next(): number {
    this.s = (this.s + 0x6d2b79f5) | 0
    let t = this.s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  int(n: number): number {
    return Math.floor(this.next() * n)
  }
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1)
  }
  chance(p: number): boolean {
    return this.next() < p
  }
  pick<A>(xs: ReadonlyArray<A>): A {
    return xs[this.int(xs.length)]!
  }
  /** `n` distinct items in a deterministic order (partial shuffle of index positions). */
  sample<A>(xs: ReadonlyArray<A>, n: number): Array<A> {
    const idx = xs.map((_, i) => i)
    const k = Math.min(n, xs.length)
    for (let i = 0; i < k; i++) {
      const j = i + this.int(idx.length - i)
      const t = idx[i]!
      idx[i] = idx[j]!
      idx[j] = t
    }
    return idx.slice(0, k).map((i) => xs[i]!)
  }
}

export const rngFor = (kindKey: number, index: number, salt = 0): Rng =>
  new Rng(hash3(kindKey, index, 1000 + salt))
