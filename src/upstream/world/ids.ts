import { hash2, hash3 } from "./random.ts"

/**
 * Bijections between entity indices and the numbers printed in identifiers. Decoding an
 * identifier is: parse the number, invert the permutation, check the index range, then
 * regenerate the entity and compare the whole identifier (which rejects forgeries).
 */
export interface Perm {
  readonly size: number
  readonly forward: (x: number) => number
  readonly inverse: (y: number) => number
}

/** Balanced Feistel network over `bits` (even, at most 52) bits: a keyed pseudo-random bijection. */
export const feistel = (bits: number, key: number): Perm => {
  const half = bits / 2
  const H = 2 ** half
  const mask = H - 1
  const keys = [0, 1, 2, 3].map((r) => hash2(key, r))
  const F = (r: number, x: number): number => hash2(keys[r]!, x) & mask
  return {
    size: 2 ** bits,
    forward: (x) => {
      let L = Math.floor(x / H)
      let R = x % H
      for (let r = 0; r < 4; r++) {
        const t = R
        R = (L ^ F(r, R)) >>> 0
        L = t
      }
      return L * H + R
    },
    inverse: (y) => {
      let L = Math.floor(y / H)
      let R = y % H
      for (let r = 3; r >= 0; r--) {
        const t = L
        L = (R ^ F(r, L)) >>> 0
        R = t
      }
      return L * H + R
    }
  }
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b))

const modInverse = (a: number, m: number): number => {
  let [r0, r1] = [m, a]
  let [t0, t1] = [0, 1]
  while (r1 !== 0) {
    const q = Math.floor(r0 / r1)
    ;[r0, r1] = [r1, r0 - q * r1]
    ;[t0, t1] = [t1, t0 - q * t1]
  }
  return ((t0 % m) + m) % m
}

/** x -> (a*x + b) mod size: a bijection over any size, used where the domain is not a power of two. */
export const affine = (size: number, key: number): Perm => {
  if (size > 90_000_000) throw new Error("affine permutation domain too large for exact arithmetic")
  let a = (hash3(key, size, 1) % size) | 1
  while (a < 2 || gcd(a, size) !== 1) a = (a + 1) % size
  const b = hash3(key, size, 2) % size
  const ainv = modInverse(a, size)
  return {
    size,
    forward: (x) => (a * x + b) % size,
    inverse: (y) => (ainv * ((((y - b) % size) + size) % size)) % size
  }
}

export const B36 = "0123456789abcdefghijklmnopqrstuvwxyz"
export const B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

export const encodeBase = (n: number, alphabet: string, width: number): string => {
  const base = alphabet.length
  let s = ""
  let x = n
  do {
    s = alphabet[x % base]! + s
    x = Math.floor(x / base)
  } while (x > 0)
  return s.padStart(width, alphabet[0]!)
}

export const decodeBase = (s: string, alphabet: string): number | undefined => {
  if (s.length === 0 || s.length > 10) return undefined
  const base = alphabet.length
  let n = 0
  for (const ch of s) {
    const d = alphabet.indexOf(ch)
    if (d < 0) return undefined
    n = n * base + d
  }
  return n
}

export const parseDigits = (s: string, maxLen: number): number | undefined =>
  /^\d+$/.test(s) && s.length <= maxLen ? Number(s) : undefined

/**
 * 19-digit ids shaped like the platforms' own (time in the high bits, so ids grow with time):
 * seconds since `epochSeconds` shifted left 32, with a permuted entity key in the low 32 bits.
 */
export const encodeSnowflake = (seconds: number, epochSeconds: number, low32: number): string =>
  ((BigInt(seconds - epochSeconds) << 32n) | BigInt(low32 >>> 0)).toString()

/** Older ids have fewer digits (less time has passed since the epoch), so any length up to 20 parses. */
export const decodeSnowflakeLow = (id: string): number | undefined => {
  if (!/^[1-9]\d{0,19}$/.test(id)) return undefined
  const v = BigInt(id)
  return v < 1n << 64n ? Number(v & 0xffffffffn) : undefined
}
