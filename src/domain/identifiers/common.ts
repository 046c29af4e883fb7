import { hasControlCharacter } from "../controlCharacters.ts"

/**
 * Cleaning what agents send as identifiers: URLs (tracking parameters, `www`/`m` hosts and trailing
 * slashes tolerated), slugs, URNs and website domains. Pure: each returns a cleaned identifier or
 * a message saying what to send instead, and URLs are judged against the `Hosts` it is given.
 */

export type Parsed<A> =
  | { readonly ok: true; readonly value: A }
  | { readonly ok: false; readonly message: string }
export const ok = <A>(value: A): Parsed<A> => ({ ok: true, value })
export const fail = <A>(message: string): Parsed<A> => ({ ok: false, message })

/** A URL of `host` (bare, `www.` or `m.`), with or without a scheme: its path segments, or undefined. */
export const urlPath = (raw: string, host: string): ReadonlyArray<string> | undefined => {
  const text = raw.trim()
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`
  let url: URL
  try {
    url = new URL(withScheme)
  } catch {
    return undefined
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return undefined
  const hostname = url.hostname.toLowerCase().replace(/^(www|m)\./, "")
  if (hostname !== host) return undefined
  return url.pathname
    .split("/")
    .filter((segment) => segment.length > 0)
    .map(decodeSegment)
}

/**
 * A path segment percent-decoded, or left as sent when it does not decode (`%ZZ`) or would decode
 * to a control character (`%00`): either way no pattern accepts it, and it never reaches storage.
 */
const decodeSegment = (segment: string): string => {
  let decoded: string
  try {
    decoded = decodeURIComponent(segment)
  } catch {
    return segment
  }
  return hasControlCharacter(decoded) ? segment : decoded
}

export const looksLikeUrl = (raw: string): boolean =>
  /^[a-z]+:\/\//i.test(raw.trim()) || /^[^\s/]+\.[a-z]{2,}\//i.test(raw.trim())
