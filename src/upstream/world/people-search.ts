import type { PeopleSearchResult } from "../../contract/records.ts"
import type { Page, PeopleQuery } from "../contract.ts"
import { companyIndexByNumericId, companyIndexBySlug, companyNames } from "./companies.ts"
import type { Ctx } from "./context.ts"
import { InvalidCursor as INVALID, type InvalidCursor, scopeOf, slicePage, startOffset } from "./cursor.ts"
import { Lru } from "./lru.ts"
import { personCore } from "./people.ts"
import { type Postings, peopleTable, postingsSize } from "./people-index.ts"
import { SIZES } from "./sizes.ts"
import { allMatch, levenshtein, platformPath, queryTokens, tokenize } from "./text.ts"
import { FIRST_NAMES, LAST_NAMES, ROLES, SCHOOLS, SENIORITY } from "./words.ts"

export const PEOPLE_SEARCH_CAP = 300

const mask = <A>(xs: ReadonlyArray<A>, hit: (x: A) => boolean): Uint8Array => {
  const out = new Uint8Array(xs.length)
  for (let i = 0; i < xs.length; i++) if (hit(xs[i]!)) out[i] = 1
  return out
}

const TITLE_WORDS = ROLES.map((r) => tokenize(r))
const SENIORITY_WORDS = SENIORITY.map((s) => tokenize(s))
const SCHOOL_WORDS = SCHOOLS.map((s) => tokenize(s))

/** Companies a filter names: exact for ids, URNs, URLs and slugs; fuzzy for names. */
export const companyFilter = (ctx: Ctx, raw: string): Uint8Array => {
  const s = raw.trim()
  const out = new Uint8Array(SIZES.companies)
  const urn = /^urn:li:fsd_company:(\d+)$/.exec(s)
  const path = platformPath(s, ctx.hosts.profnet)
  const exact =
    urn !== null
      ? companyIndexByNumericId(ctx, urn[1]!)
      : /^\d+$/.test(s)
        ? companyIndexByNumericId(ctx, s)
        : path !== undefined && path[0] === "company" && path[1] !== undefined
          ? companyIndexBySlug(ctx, path[1])
          : companyIndexBySlug(ctx, s)
  if (exact !== undefined) {
    out[exact] = 1
    return out
  }
  if (urn !== null || /^\d+$/.test(s) || path !== undefined) return out
  const tokens = queryTokens(s)
  const squashed = tokens.join("")
  const names = companyNames(ctx)
  let found = false
  names.forEach((c, i) => {
    if (tokens.length > 0 && (allMatch(tokens, c.tokens, true) || c.slug.replace("-", "") === squashed)) {
      out[i] = 1
      found = true
    }
  })
  // Typo tolerance for whole names ("Apex Lbas"), as the platform's fuzzy matching allows.
  if (!found && squashed.length >= 6) {
    names.forEach((c, i) => {
      if (levenshtein(squashed, c.slug.replace("-", ""), 2) <= 2) out[i] = 1
    })
  }
  return out
}

interface Ranked {
  readonly order: Int32Array
  readonly total: number
}

const rankCache = new WeakMap<Ctx, Lru<Ranked>>()

/** A query term: the field values it matches; a person matches when any of their values is marked. */
interface Term {
  readonly first: Uint8Array
  readonly last: Uint8Array
  readonly role: Uint8Array
  readonly sen: Uint8Array
  readonly company: Uint8Array
  readonly school: Uint8Array
}

const titleTerm = (w: string): Pick<Term, "role" | "sen"> => ({
  role: mask(TITLE_WORDS, (r) => allMatch([w], r, true)),
  sen: mask(SENIORITY_WORDS, (r) => allMatch([w], r, true))
})

const keywordTerm = (ctx: Ctx, w: string): Term => ({
  first: mask(FIRST_NAMES, (n) => n.toLowerCase() === w),
  last: mask(LAST_NAMES, (n) => n.toLowerCase() === w),
  ...titleTerm(w),
  school: mask(SCHOOL_WORDS, (r) => allMatch([w], r, true)),
  company: mask(companyNames(ctx), (c) => allMatch([w], c.tokens, true))
})

const exactName = (names: ReadonlyArray<string>, v: string | undefined): Uint8Array | undefined =>
  v === undefined ? undefined : mask(names, (n) => n.toLowerCase() === v.trim().toLowerCase())

/** Candidate sources: each is a union of postings; the search walks only the smallest one. */
type Source = ReadonlyArray<readonly [Postings, Uint8Array]>

const rank = (ctx: Ctx, q: PeopleQuery): Ranked => {
  const t = peopleTable(ctx)
  const by = t.by
  const kw = queryTokens(q.keywords ?? "").map((w) => keywordTerm(ctx, w))
  const titles = queryTokens(q.title ?? "").map(titleTerm)
  const first = exactName(FIRST_NAMES, q.first_name)
  const last = exactName(LAST_NAMES, q.last_name)
  const schoolTokens = queryTokens(q.school ?? "")
  const school =
    q.school === undefined
      ? undefined
      : mask(SCHOOL_WORDS, (s) => schoolTokens.length > 0 && allMatch(schoolTokens, s, true))
  const current = q.current_company === undefined ? undefined : companyFilter(ctx, q.current_company)
  const past = q.past_company === undefined ? undefined : companyFilter(ctx, q.past_company)

  const sources: Array<Source> = [
    ...kw.map(
      (m): Source => [
        [by.first, m.first],
        [by.last, m.last],
        [by.role, m.role],
        [by.sen, m.sen],
        [by.company, m.company],
        [by.school, m.school]
      ]
    ),
    ...titles.map(
      (m): Source => [
        [by.role, m.role],
        [by.sen, m.sen]
      ]
    ),
    ...(first ? [[[by.first, first]] as Source] : []),
    ...(last ? [[[by.last, last]] as Source] : []),
    ...(school ? [[[by.school, school]] as Source] : []),
    ...(current ? [[[by.company, current]] as Source] : []),
    ...(past ? [[[by.past, past]] as Source] : [])
  ]
  if (sources.length === 0) return { order: new Int32Array(0), total: 0 }
  const size = (src: Source) => src.reduce((n, [p, v]) => n + postingsSize(p, v), 0)
  const sized = sources.map((src) => [src, size(src)] as const)
  const [smallest, bound] = sized.reduce((a, b) => (b[1] < a[1] ? b : a))

  // Sort keys pack (score, prominence, index) into one exact double: a native numeric sort ranks them.
  const keys = new Float64Array(bound)
  let count = 0
  const visit = (i: number): void => {
    const anon = t.anon[i] === 1
    if (first && (anon || first[t.first[i]!] !== 1)) return
    if (last && (anon || last[t.last[i]!] !== 1)) return
    if (school && school[t.school[i]!] !== 1) return
    if (current && current[t.company[i]!] !== 1) return
    if (past && past[t.past1[i]!] !== 1 && past[t.past2[i]!] !== 1) return
    for (const m of titles) if (m.role[t.role[i]!] !== 1 && m.sen[t.sen[i]!] !== 1) return
    let score = 0
    for (const m of kw) {
      if (!anon && (m.first[t.first[i]!] === 1 || m.last[t.last[i]!] === 1)) score += 6
      else if (m.role[t.role[i]!] === 1 || m.sen[t.sen[i]!] === 1) score += 4
      else if (m.company[t.company[i]!] === 1) score += 3
      else if (m.school[t.school[i]!] === 1) score += 2
      else return
    }
    keys[count++] = (Math.min(255, score) * 256 + t.prom[i]!) * 131072 + (131071 - i)
  }
  const stamp = ++t.stamp
  for (const [p, values] of smallest)
    for (let v = 0; v < values.length; v++) {
      if (values[v] !== 1) continue
      for (let x = p.offsets[v]!; x < p.offsets[v + 1]!; x++) {
        const i = p.items[x]!
        if (t.seen[i] === stamp) continue
        t.seen[i] = stamp
        visit(i)
      }
    }
  const sorted = keys.subarray(0, count).sort()
  const top = Math.min(sorted.length, PEOPLE_SEARCH_CAP)
  const order = new Int32Array(top)
  for (let j = 0; j < top; j++) order[j] = 131071 - (sorted[sorted.length - 1 - j]! % 131072)
  return { order, total: count }
}

const normalizeQuery = (q: PeopleQuery): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(q))
    if (typeof v === "string" && v.trim() !== "") out[k] = v.trim().toLowerCase()
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)))
}

export const searchPeople = (
  ctx: Ctx,
  query: PeopleQuery,
  cursor: string | undefined,
  limit: number
): Page<PeopleSearchResult> | InvalidCursor => {
  const norm = normalizeQuery(query)
  const scope = scopeOf(ctx.seedKey, "searchPeople", norm)
  const offset = startOffset(cursor, scope)
  if (offset === undefined) return INVALID
  let lru = rankCache.get(ctx)
  if (lru === undefined) {
    lru = new Lru<Ranked>(8)
    rankCache.set(ctx, lru)
  }
  const ranked = lru.get(JSON.stringify(norm), () => rank(ctx, norm))
  const size = Math.max(1, Math.min(30, Math.floor(limit)))
  return slicePage(
    ranked.order.length,
    offset,
    size,
    PEOPLE_SEARCH_CAP,
    scope,
    (j) => searchResult(ctx, ranked.order[j]!),
    ranked.total
  )
}

export const searchResult = (ctx: Ctx, i: number): PeopleSearchResult => {
  const p = personCore(ctx, i)
  return {
    name: p.anonymous ? "Profnet Member" : `${p.firstName} ${p.lastName}`,
    position: p.headline,
    location: p.location,
    urn: p.urn,
    public_identifier: p.anonymous ? null : p.slug,
    is_anonymous: p.anonymous
  }
}
