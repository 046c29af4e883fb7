import type { Page } from "../contract.ts"
import { hash2, hashString } from "./random.ts"

export { InvalidCursor } from "../contract.ts"

/**
 * A scope identifies one query in one world: the seed key, the operation and its canonical
 * arguments. Cursors carry an offset and a MAC over (scope, offset), so a cursor from another
 * query, another world or with an edited offset is detected.
 */
export const scopeOf = (seedKey: number, op: string, args: unknown): number =>
  hash2(seedKey, hashString(op + "\u0000" + JSON.stringify(args)))

const mac = (scope: number, offset: number): string => hash2(scope, offset).toString(36)

const toB64Url = (s: string): string => btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")

const fromB64Url = (s: string): string | undefined => {
  if (!/^[A-Za-z0-9_-]+$/.test(s)) return undefined
  try {
    return atob(s.replace(/-/g, "+").replace(/_/g, "/"))
  } catch {
    return undefined
  }
}

export const encodeCursor = (scope: number, offset: number): string =>
  toB64Url(JSON.stringify({ o: offset, m: mac(scope, offset) }))

/** The offset a cursor points at, or undefined when it does not belong to `scope`. */
export const decodeCursor = (cursor: string, scope: number): number | undefined => {
  const json = fromB64Url(cursor)
  if (json === undefined) return undefined
  try {
    const v: unknown = JSON.parse(json)
    if (typeof v !== "object" || v === null) return undefined
    const { o, m } = v as { o?: unknown; m?: unknown }
    if (typeof o !== "number" || !Number.isSafeInteger(o) || o < 0 || m !== mac(scope, o)) return undefined
    return o
  } catch {
    return undefined
  }
}

/** Offset to start from: 0 without a cursor, undefined for a foreign cursor. */
export const startOffset = (cursor: string | undefined, scope: number): number | undefined =>
  cursor === undefined ? 0 : decodeCursor(cursor, scope)

export const page = <A>(
  items: ReadonlyArray<A>,
  nextOffset: number | undefined,
  scope: number,
  total?: number
): Page<A> => {
  const next_cursor = nextOffset === undefined ? null : encodeCursor(scope, nextOffset)
  return total === undefined ? { items, next_cursor } : { items, next_cursor, total_matches: total }
}

/** One page out of a fully ranked list of `count` results that stops at `cap`. */
export const slicePage = <A>(
  count: number,
  offset: number,
  size: number,
  cap: number,
  scope: number,
  at: (i: number) => A,
  total?: number
): Page<A> => {
  const end = Math.min(offset + size, count, cap)
  const items: Array<A> = []
  for (let i = offset; i < end; i++) items.push(at(i))
  return page(items, end < Math.min(count, cap) ? end : undefined, scope, total)
}
