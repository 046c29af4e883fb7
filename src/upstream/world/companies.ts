import type { Company } from "../../contract/records.ts"
import type { Ctx } from "./context.ts"
import { parseDigits } from "./ids.ts"
import { hash3, pareto, rngFor, u3 } from "./random.ts"
import { SIZES } from "./sizes.ts"
import { capitalize, levenshtein, tokenize } from "./text.ts"
import { CITIES, COMPANY_KINDS, COMPANY_STEMS, INDUSTRIES, SKILLS, TLDS } from "./words.ts"

const NUMERIC_OFFSET = 1000
const STEM_INDEX = new Map(COMPANY_STEMS.map((w, i) => [w, i]))
const KIND_INDEX = new Map(COMPANY_KINDS.map(([w], i) => [w, i]))

export interface CompanyCore {
  readonly index: number
  readonly name: string
  readonly slug: string
  readonly domain: string
  readonly numericId: string
  readonly urn: string
  readonly industry: string
  readonly employees: number
  readonly city: string
  readonly postCount: number
}

export const companyCore = (ctx: Ctx, c: number): CompanyCore => {
  const q = ctx.perm.companyPair.forward(c)
  const stem = COMPANY_STEMS[Math.floor(q / COMPANY_KINDS.length)]!
  const [kind, industry] = COMPANY_KINDS[q % COMPANY_KINDS.length]!
  const k = ctx.k.company
  const numericId = String(ctx.perm.companyNumeric.forward(c) + NUMERIC_OFFSET)
  return {
    index: c,
    name: `${capitalize(stem)} ${kind === "ai" ? "AI" : capitalize(kind)}`,
    slug: `${stem}-${kind}`,
    domain: `${stem}${kind}.${TLDS[hash3(k, c, 1) % TLDS.length]}`,
    numericId,
    urn: `urn:li:fsd_company:${numericId}`,
    industry: INDUSTRIES[industry]!,
    employees: pareto(u3(k, c, 2), 11, 0.7, 250_000),
    city: CITIES[hash3(k, c, 3) % CITIES.length]!,
    postCount: pareto(u3(k, c, 4), 4, 0.9, 400)
  }
}

export const companyUrl = (ctx: Ctx, slug: string): string => `https://${ctx.hosts.profnet}/company/${slug}`

export const company = (ctx: Ctx, c: number): Company => {
  const core = companyCore(ctx, c)
  const rng = rngFor(ctx.k.company, c)
  const founded = 2025 - Math.floor(rng.next() ** 2.2 * 70)
  const city = core.city.split(",")[0]!
  const audiences = [
    "teams",
    "enterprises",
    "small businesses",
    "families",
    "developers",
    "hospitals",
    "retailers"
  ]
  const verbs = [
    "move faster",
    "cut costs",
    "grow sustainably",
    "make better decisions",
    "serve customers better"
  ]
  return {
    urn: core.urn,
    numeric_id: core.numericId,
    slug: core.slug,
    name: core.name,
    description:
      `${core.name} is a ${core.industry.toLowerCase()} company headquartered in ${city}. ` +
      `Since ${founded} we have helped ${rng.pick(audiences)} ${rng.pick(verbs)}.`,
    industry: core.industry,
    employee_count: reportedEmployees(ctx, c, core.employees),
    headquarters: core.city,
    website: `https://${core.domain}`,
    domain: core.domain,
    founded_year: founded,
    specialities: rng.sample(SKILLS, rng.range(3, 6)),
    url: companyUrl(ctx, core.slug)
  }
}

const fromPair = (ctx: Ctx, stem: number, kind: number): number | undefined => {
  const c = ctx.perm.companyPair.inverse(stem * COMPANY_KINDS.length + kind)
  return c < SIZES.companies ? c : undefined
}

export const companyIndexBySlug = (ctx: Ctx, slug: string): number | undefined => {
  const parts = slug.toLowerCase().split("-")
  if (parts.length !== 2) return undefined
  const stem = STEM_INDEX.get(parts[0]!)
  const kind = KIND_INDEX.get(parts[1]!)
  return stem === undefined || kind === undefined ? undefined : fromPair(ctx, stem, kind)
}

export const normalizeDomain = (domain: string): string =>
  domain
    .trim()
    .toLowerCase()
    .replace(/^[a-z]+:\/\//, "")
    .replace(/^www\./, "")
    .replace(/[/?#].*$/, "")
    .replace(/\.$/, "")

export const companyIndexByDomain = (ctx: Ctx, domain: string): number | undefined => {
  const d = normalizeDomain(domain)
  const dot = d.lastIndexOf(".")
  if (dot <= 0) return undefined
  const base = d.slice(0, dot)
  for (let i = 1; i < base.length; i++) {
    const stem = STEM_INDEX.get(base.slice(0, i))
    const kind = stem === undefined ? undefined : KIND_INDEX.get(base.slice(i))
    if (stem === undefined || kind === undefined) continue
    const c = fromPair(ctx, stem, kind)
    if (c !== undefined && companyCore(ctx, c).domain === d) return c
  }
  return undefined
}

export const companyIndexByNumericId = (ctx: Ctx, id: string): number | undefined => {
  const n = parseDigits(id, 9)
  if (n === undefined || n < NUMERIC_OFFSET || n - NUMERIC_OFFSET >= ctx.perm.companyNumeric.size)
    return undefined
  const c = ctx.perm.companyNumeric.inverse(n - NUMERIC_OFFSET)
  return c < SIZES.companies && companyCore(ctx, c).numericId === id ? c : undefined
}

/** Names, slugs and domains of all companies: about 5,000 short strings, built once per world. */
export const companyNames = (ctx: Ctx): NonNullable<Ctx["cache"]["companyNames"]> => {
  if (ctx.cache.companyNames === undefined) {
    ctx.cache.companyNames = Array.from({ length: SIZES.companies }, (_, c) => {
      const { name, slug, domain } = companyCore(ctx, c)
      return { name, slug, domain, tokens: tokenize(name) }
    })
  }
  return ctx.cache.companyNames
}

/** The `n` nearest company domains by edit distance (ties alphabetical); a bounded scan of all. */
export const closestDomains = (ctx: Ctx, domain: string, n: number): Array<string> => {
  const d = normalizeDomain(domain)
  const want = Math.max(0, Math.floor(n))
  const best: Array<{ readonly domain: string; readonly dist: number }> = []
  const before = (a: { domain: string; dist: number }, b: { domain: string; dist: number }) =>
    a.dist - b.dist || (a.domain < b.domain ? -1 : 1)
  for (const x of want === 0 ? [] : companyNames(ctx)) {
    const bound = best.length < want ? Number.POSITIVE_INFINITY : best[want - 1]!.dist
    const dist = levenshtein(d, x.domain, bound)
    if (dist > bound) continue
    best.push({ domain: x.domain, dist })
    best.sort(before)
    if (best.length > want) best.pop()
  }
  return best.map((x) => x.domain)
}

/** Cumulative hiring weights of all companies: one Float64Array of 5,001 entries per world. */
const cumWeights = (ctx: Ctx): Float64Array => {
  if (ctx.cache.companyCumWeights === undefined) {
    const cum = new Float64Array(SIZES.companies + 1)
    for (let c = 0; c < SIZES.companies; c++) cum[c + 1] = cum[c]! + Math.sqrt(companyCore(ctx, c).employees)
    ctx.cache.companyCumWeights = cum
  }
  return ctx.cache.companyCumWeights
}

/**
 * The headcount a company reports. It is at least three times the number of world people
 * expected to work there (plus slack), so the people a search finds never outnumber it.
 */
const reportedEmployees = (ctx: Ctx, c: number, base: number): number => {
  const cum = cumWeights(ctx)
  const others = SIZES.people - SIZES.companies
  const expected = 1 + (others * (cum[c + 1]! - cum[c]!)) / cum[SIZES.companies]!
  return Math.max(base, Math.ceil(3 * expected) + 5)
}

/**
 * Employer of a person. The first `companies` positions of a person permutation give every
 * company one employee; everyone else is drawn with weight sqrt(employee_count), so big
 * companies have more people without any company's roster being stored.
 */
export const employerOf = (ctx: Ctx, person: number, salt: number, u: number): number => {
  if (salt === 0) {
    const r = ctx.perm.personReserve.forward(person)
    if (r < SIZES.companies) return r
  }
  const cum = cumWeights(ctx)
  const target = u * cum[SIZES.companies]!
  let lo = 0
  let hi = SIZES.companies - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (cum[mid + 1]! <= target) lo = mid + 1
    else hi = mid
  }
  return lo
}
