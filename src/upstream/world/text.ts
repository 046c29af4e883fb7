import { STOPWORDS } from "./words-text.ts"

/** The fixed "now" of the world: dates never depend on the wall clock. */
export const EPOCH_MS = Date.UTC(2026, 10, 1)
export const DAY_MS = 86_400_000
export const YEAR_MS = 365 * DAY_MS

export const iso = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString()
export const yearMonth = (ms: number): string => new Date(ms).toISOString().slice(0, 7)
export const yearOf = (ms: number): number => new Date(ms).getUTCFullYear()

export const tokenize = (s: string): Array<string> =>
  s
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((t) => t.length > 0)

/** Distinct lower-case query terms without stopwords; an empty result means "matches nothing". */
export const queryTokens = (q: string): Array<string> => [
  ...new Set(tokenize(q).filter((t) => !STOPWORDS.has(t)))
]

export const capitalize = (s: string): string => (s.length === 0 ? s : s[0]!.toUpperCase() + s.slice(1))

export const slugify = (s: string, sep = "-"): string =>
  tokenize(s.normalize("NFKD").replace(/[\u0300-\u036f]/g, "")).join(sep)

/** Every token of `needles` equals a token of `hay` (or prefixes one, for terms of 3+ letters). */
export const allMatch = (
  needles: ReadonlyArray<string>,
  hay: ReadonlyArray<string>,
  prefix: boolean
): boolean => needles.every((n) => hay.some((h) => h === n || (prefix && n.length >= 3 && h.startsWith(n))))

const rowA = new Int32Array(256)
const rowB = new Int32Array(256)

/**
 * Edit distance, or `max + 1` as soon as it must exceed `max`. Two reused rows keep a scan over
 * thousands of domains allocation-free, and the bound lets most of them stop after a few rows.
 */
export const levenshtein = (a: string, b: string, max = Number.POSITIVE_INFINITY): number => {
  if (a === b) return 0
  if (Math.abs(a.length - b.length) > max) return max + 1
  if (b.length >= rowA.length) return Math.max(a.length, b.length)
  let prev = rowA
  let cur = rowB
  for (let j = 0; j <= b.length; j++) prev[j] = j
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i
    let rowMin = i
    const ca = a.charCodeAt(i - 1)
    for (let j = 1; j <= b.length; j++) {
      const sub = prev[j - 1]! + (ca === b.charCodeAt(j - 1) ? 0 : 1)
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, sub)
      if (cur[j]! < rowMin) rowMin = cur[j]!
    }
    if (rowMin > max) return max + 1
    const t = prev
    prev = cur
    cur = t
  }
  return prev[b.length]!
}

/** Replace `{name}` slots; a missing slot is left visible so a bad template is noticed in review. */
export const fill = (template: string, slots: Readonly<Record<string, string>>): string =>
  template.replace(/\{(\w+)\}/g, (m, k: string) => slots[k] ?? m)

/**
 * Host and path of a platform URL, tolerating a missing scheme, `www.`/`m.` subdomains, query
 * strings, fragments and trailing slashes. Returns undefined for another host.
 */
export const platformPath = (url: string, host: string): Array<string> | undefined => {
  const raw = url.trim()
  let parsed: URL
  try {
    parsed = new URL(/^[a-z]+:\/\//i.test(raw) ? raw : `https://${raw}`)
  } catch {
    return undefined
  }
  const h = parsed.hostname.toLowerCase().replace(/^(www|m)\./, "")
  if (h !== host) return undefined
  return parsed.pathname
    .split("/")
    .filter((p) => p.length > 0)
    .map(safeDecode)
}

const safeDecode = (p: string): string => {
  try {
    return decodeURIComponent(p)
  } catch {
    return p
  }
}
