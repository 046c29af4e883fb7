import type { Education, Experience, Person } from "../../contract/records.ts"
import { companyCore, employerOf } from "./companies.ts"
import type { Ctx } from "./context.ts"
import { B36, B62, decodeBase, encodeBase } from "./ids.ts"
import { hash2, hash3, pareto, Rng, rngFor } from "./random.ts"
import { SIZES } from "./sizes.ts"
import { DAY_MS, EPOCH_MS, YEAR_MS, yearMonth, yearOf } from "./text.ts"
import {
  CITIES,
  DEGREES,
  FIELDS,
  FIRST_NAMES,
  LAST_NAMES,
  ROLES,
  SCHOOLS,
  SENIORITY,
  SKILLS
} from "./words.ts"

const URN_PREFIX = "urn:li:fsd_profile:ACoAA"
const FILLER = B62 + "-_"

/** The numeric facts of a person: cheap enough to compute for everyone when a search needs it. */
export interface PersonFields {
  readonly first: number
  readonly last: number
  readonly seniority: number
  readonly role: number
  readonly company: number
  readonly past1: number
  readonly past2: number
  readonly city: number
  readonly school: number
  readonly anonymous: boolean
  readonly followers: number
  readonly postCount: number
}

/** One short PRNG stream per person: the search index builds these for every person at once. */
export const personFields = (ctx: Ctx, i: number): PersonFields => {
  const r = new Rng(hash2(ctx.k.person, i))
  const first = r.int(FIRST_NAMES.length)
  const last = r.int(LAST_NAMES.length)
  const role = r.int(ROLES.length)
  const seniority = r.int(SENIORITY.length)
  const city = r.int(CITIES.length)
  const school = r.int(SCHOOLS.length)
  const anonymous = r.next() < 0.05
  const followers = pareto(r.next(), 20, 1.1, 3_000_000)
  const silent = r.next() < 0.2
  const posts = pareto(r.next(), 1, 0.7, 300)
  return {
    first,
    last,
    seniority: EXECUTIVE[role] ? 0 : seniority,
    role,
    company: employerOf(ctx, i, 0, r.next()),
    past1: employerOf(ctx, i, 1, r.next()),
    past2: employerOf(ctx, i, 2, r.next()),
    city,
    school,
    anonymous,
    followers,
    // Anonymous members never show up as post authors: their profile is private.
    postCount: anonymous || silent ? 0 : posts
  }
}

const EXECUTIVE = ROLES.map((r) => r.startsWith("!"))

export const roleTitle = (seniority: number, role: number): string => {
  const r = ROLES[role]!.replace(/^!/, "")
  const s = SENIORITY[seniority]!
  return s === "" ? r : `${s} ${r}`
}

export interface PersonCore extends PersonFields {
  readonly index: number
  readonly firstName: string
  readonly lastName: string
  readonly title: string
  readonly companyName: string
  readonly companySlug: string
  readonly headline: string
  readonly location: string
  readonly slug: string
  readonly urn: string
}

export const personSlug = (ctx: Ctx, i: number, f: PersonFields): string =>
  `${FIRST_NAMES[f.first]}-${LAST_NAMES[f.last]}-${encodeBase(ctx.perm.personSlug.forward(i), B36, 7)}`.toLowerCase()

export const personUrn = (ctx: Ctx, i: number): string => {
  const rng = rngFor(ctx.k.person, i, 7)
  let filler = ""
  for (let j = 0; j < 28; j++) filler += FILLER[rng.int(FILLER.length)]
  return URN_PREFIX + encodeBase(ctx.perm.personUrn.forward(i), B62, 6) + filler
}

export const personCore = (ctx: Ctx, i: number): PersonCore => {
  const f = personFields(ctx, i)
  const co = companyCore(ctx, f.company)
  const title = roleTitle(f.seniority, f.role)
  const flourish =
    hash3(ctx.k.person, i, 11) % 3 === 0 ? ` | ${SKILLS[hash3(ctx.k.person, i, 12) % SKILLS.length]}` : ""
  return {
    ...f,
    index: i,
    firstName: FIRST_NAMES[f.first]!,
    lastName: LAST_NAMES[f.last]!,
    title,
    companyName: co.name,
    companySlug: co.slug,
    headline: `${title} at ${co.name}${flourish}`,
    location: CITIES[f.city]!,
    slug: personSlug(ctx, i, f),
    urn: personUrn(ctx, i)
  }
}

export const profileUrl = (ctx: Ctx, slug: string): string => `https://${ctx.hosts.profnet}/in/${slug}`

/** Index of a public (non-anonymous) person, or undefined for unknown, forged or private ids. */
export const personIndexBySlug = (ctx: Ctx, slug: string): number | undefined => {
  const s = slug.toLowerCase()
  const dash = s.lastIndexOf("-")
  const code = dash < 0 ? undefined : decodeBase(s.slice(dash + 1), B36)
  if (code === undefined || code >= ctx.perm.personSlug.size) return undefined
  const i = ctx.perm.personSlug.inverse(code)
  if (i >= SIZES.people) return undefined
  const f = personFields(ctx, i)
  return !f.anonymous && personSlug(ctx, i, f) === s ? i : undefined
}

/** Same rules as by slug; URN ids are case-sensitive. */
export const personIndexByUrn = (ctx: Ctx, urn: string, allowAnonymous = false): number | undefined => {
  if (!urn.startsWith(URN_PREFIX)) return undefined
  const code = decodeBase(urn.slice(URN_PREFIX.length, URN_PREFIX.length + 6), B62)
  if (code === undefined || code >= ctx.perm.personUrn.size) return undefined
  const i = ctx.perm.personUrn.inverse(code)
  if (i >= SIZES.people || personUrn(ctx, i) !== urn) return undefined
  return allowAnonymous || !personFields(ctx, i).anonymous ? i : undefined
}

export const person = (ctx: Ctx, i: number): Person => {
  const c = personCore(ctx, i)
  const rng = rngFor(ctx.k.person, i)
  const currentStart = EPOCH_MS - Math.floor(rng.next() * 6 * YEAR_MS) - 30 * DAY_MS
  const past2Start = currentStart - (1 + rng.next() * 4) * YEAR_MS
  const past1Start = past2Start - (1 + rng.next() * 3) * YEAR_MS
  const juniorTitle = roleTitle(
    rng.chance(0.5) ? 0 : 9,
    ROLES[c.role]!.startsWith("!") ? rng.int(30) : c.role
  )
  const job = (title: string, co: number, start: number, end: number | null): Experience => {
    const cc = companyCore(ctx, co)
    return {
      title,
      company_name: cc.name,
      company_slug: cc.slug,
      start: yearMonth(start),
      end: end === null ? null : yearMonth(end),
      description: `${rng.pick(DUTIES)} ${rng.pick(SKILLS).toLowerCase()} ${rng.pick(OUTCOMES)}`
    }
  }
  const gradYear = yearOf(past1Start)
  const degree = rng.int(DEGREES.length)
  const education: Education = {
    school: SCHOOLS[c.school]!,
    degree: DEGREES[degree]!,
    field: rng.pick(FIELDS),
    start_year: gradYear - (degree === 2 || degree === 3 || degree === 6 ? 2 : 4),
    end_year: gradYear
  }
  const skills = rng.sample(SKILLS, rng.range(4, 12))
  return {
    urn: c.urn,
    public_identifier: c.slug,
    name: `${c.firstName} ${c.lastName}`,
    first_name: c.firstName,
    last_name: c.lastName,
    headline: c.headline,
    location: c.location,
    current_position: { title: c.title, company_name: c.companyName, company_slug: c.companySlug },
    follower_count: c.followers,
    connection_count: Math.min(30_000, Math.floor(c.followers * (0.4 + rng.next() * 0.5)) + 10),
    profile_url: profileUrl(ctx, c.slug),
    is_anonymous: false,
    about:
      `${c.title} at ${c.companyName}, based in ${c.location.split(",")[0]}. ` +
      `I care about ${skills[0]!.toLowerCase()} and ${skills[1]!.toLowerCase()}, ` +
      `and I ${rng.pick(ABOUT_TAILS)}`,
    experience: [
      job(c.title, c.company, currentStart, null),
      job(juniorTitle, c.past2, past2Start, currentStart),
      job(juniorTitle, c.past1, past1Start, past2Start)
    ],
    education: [education],
    skills
  }
}

const DUTIES = ["Led work on", "Owned the roadmap for", "Built a team around", "Drove adoption of", "Shipped"]
const OUTCOMES = [
  "across three regions.",
  "for enterprise customers.",
  "and cut costs by 20%.",
  "from zero to launch.",
  "with a cross-functional team."
]
const ABOUT_TAILS = [
  "enjoy mentoring people early in their careers.",
  "write about lessons learned along the way.",
  "am always happy to talk shop over coffee.",
  "believe good teams beat good plans.",
  "spend weekends hiking and reading."
]
