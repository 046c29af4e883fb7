import type { ProfnetPost, ProfnetPostAuthor } from "../../contract/records.ts"
import { companyCore } from "./companies.ts"
import type { Ctx } from "./context.ts"
import { B62, decodeSnowflakeLow, encodeSnowflake } from "./ids.ts"
import { personCore, personFields } from "./people.ts"
import { pareto, type Rng, rngFor, u3 } from "./random.ts"
import { SIZES } from "./sizes.ts"
import { DAY_MS, EPOCH_MS, iso, slugify, YEAR_MS } from "./text.ts"
import { PROFNET_HASHTAGS, SKILLS } from "./words.ts"

export const PERSON_AUTHOR = 0
export const COMPANY_AUTHOR = 1
const AUTHOR_BITS = 2 ** 17
const POST_BITS = 1024

interface AuthorInfo {
  readonly author: ProfnetPostAuthor
  readonly followers: number
  readonly postCount: number
  readonly title: string
  readonly company: string
  readonly city: string
}

const authorInfo = (ctx: Ctx, kind: number, index: number): AuthorInfo | undefined => {
  if (kind === PERSON_AUTHOR) {
    if (index >= SIZES.people) return undefined
    const p = personCore(ctx, index)
    if (p.anonymous) return undefined
    const author = {
      type: "person" as const,
      name: `${p.firstName} ${p.lastName}`,
      identifier: p.slug,
      urn: p.urn
    }
    return {
      author,
      followers: p.followers,
      postCount: p.postCount,
      title: p.title,
      company: p.companyName,
      city: p.location
    }
  }
  if (index >= SIZES.companies) return undefined
  const c = companyCore(ctx, index)
  const author = { type: "company" as const, name: c.name, identifier: c.slug, urn: c.urn }
  return {
    author,
    followers: c.employees * 3 + 50,
    postCount: c.postCount,
    title: "",
    company: c.name,
    city: c.city
  }
}

/** Number of posts an author has, without generating any of them. */
export const postCountOf = (ctx: Ctx, kind: number, index: number): number =>
  kind === PERSON_AUTHOR ? personFields(ctx, index).postCount : companyCore(ctx, index).postCount

/** Post 0 is the newest; later posts are strictly older, and all fall within ~4.5 years. */
const postTime = (ctx: Ctx, authorKey: number, k: number, count: number): number => {
  const kk = ctx.k.ppost
  const newestAge = u3(kk, authorKey, 1) ** 2 * 120 * DAY_MS
  const gap = Math.max(DAY_MS / 2, Math.min(45 * DAY_MS, (4.4 * YEAR_MS - newestAge) / Math.max(1, count)))
  return EPOCH_MS - newestAge - (k + 0.9 * u3(kk, authorKey * POST_BITS + k, 2)) * gap
}

const PERSON_TEMPLATES = [
  "Excited to share that I am starting a new chapter as {title} at {company}! Grateful to everyone who helped along the way.",
  "{n} lessons I learned about {skill} this year:\n\n1. Start small.\n2. Measure everything.\n3. Share what you learn.",
  "Hot take: {skill} matters more than {skill2} for most teams. Agree or disagree?",
  "We are hiring at {company}! Looking for people who love {skill}. Send me a message if you are interested.",
  "Proud of the team at {company} for shipping a big {skill} milestone this week.",
  "Spent the weekend thinking about {skill}. The best advice I ever got: write things down.",
  "Just got back from a great {skill} meetup in {city}. So much energy in this community."
]
const COMPANY_TEMPLATES = [
  "{company} is hiring! We are growing our {skill} team in {city}. Apply today.",
  "Meet the people behind {company}: this month we celebrate our {skill} team.",
  "We are proud to announce our latest {skill} launch. Thank you to our customers for the feedback.",
  "{company} named one of the best places to work in {city} for the {n}th year.",
  "How our team uses {skill} to serve customers faster: a short thread from our engineers."
]

const postText = (rng: Rng, info: AuthorInfo, isCompany: boolean): string => {
  const t = rng.pick(isCompany ? COMPANY_TEMPLATES : PERSON_TEMPLATES)
  const slots: Record<string, string> = {
    title: info.title,
    company: info.company,
    city: info.city.split(",")[0]!,
    skill: rng.pick(SKILLS),
    skill2: rng.pick(SKILLS),
    n: String(rng.range(3, 7))
  }
  const body = t.replace(/\{(\w+)\}/g, (_, k: string) => slots[k] ?? "")
  const tags = rng.sample(PROFNET_HASHTAGS, rng.range(0, 3)).map((h) => `#${h}`)
  return tags.length === 0 ? body : `${body}\n\n${tags.join(" ")}`
}

export const profnetPost = (ctx: Ctx, kind: number, index: number, k: number): ProfnetPost | undefined => {
  const info = authorInfo(ctx, kind, index)
  if (info === undefined || k < 0 || k >= info.postCount || k >= POST_BITS) return undefined
  const authorKey = kind * AUTHOR_BITS + index
  const key = authorKey * POST_BITS + k
  const created = postTime(ctx, authorKey, k, info.postCount)
  const seconds = Math.floor(created / 1000)
  const id = encodeSnowflake(seconds, 0, ctx.perm.ppostKey.forward(key))
  const rng = rngFor(ctx.k.ppost, key)
  const isRepost = rng.chance(0.1)
  const text = (isRepost ? "Worth a read. " : "") + postText(rng, info, kind === COMPANY_AUTHOR)
  const likes = Math.floor(pareto(rng.next(), 1, 1.0, 40_000) * (1 + Math.log10(info.followers + 1)))
  let suffix = ""
  for (let j = 0; j < 4; j++) suffix += B62[rng.int(62)]
  const words = slugify(text).split("-").slice(0, 3).join("-")
  return {
    urn: `urn:li:activity:${id}`,
    text,
    created_at: iso(created),
    author: info.author,
    likes,
    comments_count: Math.floor(likes * 0.08 * rng.next()),
    shares: Math.floor(likes * 0.03 * rng.next()),
    is_repost: isRepost,
    url: `https://${ctx.hosts.profnet}/posts/${info.author.identifier}_${words}-activity-${id}-${suffix}`
  }
}

/** Post by activity URN or bare activity id; undefined unless it regenerates to the same id. */
export const profnetPostById = (ctx: Ctx, idOrUrn: string): ProfnetPost | undefined => {
  const id = idOrUrn.replace(/^urn:li:activity:/, "")
  const low = decodeSnowflakeLow(id)
  if (low === undefined) return undefined
  const key = ctx.perm.ppostKey.inverse(low)
  const k = key % POST_BITS
  const authorKey = Math.floor(key / POST_BITS)
  const post = profnetPost(ctx, Math.floor(authorKey / AUTHOR_BITS), authorKey % AUTHOR_BITS, k)
  return post !== undefined && post.urn === `urn:li:activity:${id}` ? post : undefined
}
