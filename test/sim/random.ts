import { createHash } from "node:crypto"

/** The run's randomness: one seeded stream (sfc32), forked by name so each use draws its own. */
export interface Rng {
  readonly next: () => number
  readonly int: (below: number) => number
  readonly pick: <A>(items: ReadonlyArray<A>) => A
  readonly bytes: (n: number) => Uint8Array
  readonly fork: (name: string) => Rng
}

const sfc32 = (a: number, b: number, c: number, d: number) => () => {
  a >>>= 0
  b >>>= 0
  c >>>= 0
  d >>>= 0
  let t = (a + b) | 0
  a = b ^ (b >>> 9)
  b = (c + (c << 3)) | 0
  c = (c << 21) | (c >>> 11)
  d = (d + 1) | 0
  t = (t + d) | 0
  c = (c + t) | 0
  return (t >>> 0) / 4294967296
}

export const makeRng = (seed: string): Rng => {
  const digest = createHash("sha256").update(seed).digest()
  const next = sfc32(
    digest.readUInt32LE(0),
    digest.readUInt32LE(4),
    digest.readUInt32LE(8),
    digest.readUInt32LE(12)
  )
  for (let i = 0; i < 12; i++) next()
  const int = (below: number) => Math.floor(next() * below)
  return {
    next,
    int,
    pick: (items) => items[int(items.length)]!,
    bytes: (n) => {
      const out = new Uint8Array(n)
      for (let i = 0; i < n; i++) out[i] = int(256)
      return out
    },
    fork: (name) => makeRng(`${seed}/${name}`)
  }
}
