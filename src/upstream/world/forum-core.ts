import type { Community, ForumUserSummary } from "../../contract/records.ts"
import type { Ctx } from "./context.ts"
import { hash3, pareto, rngFor, u3 } from "./random.ts"
import { SIZES, SLOTS_PER_COMMUNITY, SLOTS_PER_USER, TOPIC_GROUP_OF, TOPIC_INDEX, TOPICS } from "./sizes.ts"
import { capitalize, iso, tokenize, YEAR_MS } from "./text.ts"
import { COMMUNITY_RULES, COMMUNITY_STYLES, TOPIC_GROUPS, USER_ADJ, USER_NOUN } from "./words-text.ts"

const ADJ_INDEX = new Map(USER_ADJ.map((w, i) => [w, i]))
const NOUN_INDEX = new Map(USER_NOUN.map((w, i) => [w, i]))

export interface CommunityCore {
  readonly index: number
  readonly id: string
  readonly name: string
  readonly title: string
  readonly topic: number
  readonly topics: ReadonlyArray<string>
  readonly subscribers: number
  readonly createdMs: number
  readonly nsfw: boolean
  readonly postCount: number
  readonly url: string
}

const VARIANTS = COMMUNITY_STYLES.length - 1

/**
 * Communities 0..TOPICS-1 are the flagships named after a bare topic, so every topic has one;
 * the rest are a permuted choice among the (topic, variant style) pairs.
 */
const communityPairOf = (ctx: Ctx, c: number): readonly [topic: number, style: number] => {
  if (c < TOPICS.length) return [c, 0]
  const q = ctx.perm.communityPair.forward(c - TOPICS.length)
  return [Math.floor(q / VARIANTS), 1 + (q % VARIANTS)]
}

const communityOfPair = (ctx: Ctx, topic: number, style: number): number =>
  style === 0 ? topic : TOPICS.length + ctx.perm.communityPair.inverse(topic * VARIANTS + style - 1)

export const communityCore = (ctx: Ctx, c: number): CommunityCore => {
  const k = ctx.k.community
  const [topic, style] = communityPairOf(ctx, c)
  const t = TOPICS[topic]!
  const fill = (s: string) => s.replace("{t}", t).replace("{T}", capitalize(t))
  const [nameT, titleT] = COMMUNITY_STYLES[style]!
  const group = TOPIC_GROUPS[TOPIC_GROUP_OF[topic]!]!.topics.filter((x) => x !== t)
  const rel1 = group[hash3(k, c, 1) % group.length]!
  const rel2 = group[hash3(k, c, 2) % group.length]!
  // The community named after the bare topic is its flagship, as on the real platform.
  const subscribers =
    style === 0 ? pareto(u3(k, c, 3), 40_000, 0.8, 40_000_000) : pareto(u3(k, c, 3), 150, 0.55, 30_000_000)
  const name = fill(nameT)
  return {
    index: c,
    id: (ctx.perm.communityId.forward(c) + 36 ** 4).toString(36),
    name,
    title: fill(titleT),
    topic,
    topics: [...new Set([t, rel1, rel2])],
    subscribers,
    createdMs: Date.UTC(2008, 0, 1) + Math.floor(u3(k, c, 4) * 17.4 * YEAR_MS),
    nsfw: u3(k, c, 5) < 0.015,
    postCount: Math.min(4095, 20 + Math.floor(Math.sqrt(subscribers) * (0.4 + u3(k, c, 6)))),
    url: `https://${ctx.hosts.forum}/c/${name}/`
  }
}

export const communityIndexByName = (ctx: Ctx, raw: string): number | undefined => {
  const name = raw
    .trim()
    .replace(/^\/?c\//i, "")
    .replace(/\/$/, "")
    .toLowerCase()
  for (let s = 0; s < COMMUNITY_STYLES.length; s++) {
    const [pre, suf] = COMMUNITY_STYLES[s]![0].toLowerCase().split(/\{t\}/) as [string, string]
    if (name.length <= pre.length + suf.length || !name.startsWith(pre) || !name.endsWith(suf)) continue
    const topic = TOPIC_INDEX.get(name.slice(pre.length, name.length - suf.length))
    if (topic === undefined) continue
    const c = communityOfPair(ctx, topic, s)
    if (c < SIZES.communities && communityCore(ctx, c).name.toLowerCase() === name) return c
  }
  return undefined
}

export const community = (ctx: Ctx, c: number, includeSettings: boolean): Community => {
  const core = communityCore(ctx, c)
  const rng = rngFor(ctx.k.community, c)
  const base = {
    id: core.id,
    name: core.name,
    title: core.title,
    description: communityDescription(core),
    subscribers: core.subscribers,
    active_users: Math.max(1, Math.floor(core.subscribers * (0.0005 + rng.next() * 0.01))),
    created_at: iso(core.createdMs),
    nsfw: core.nsfw,
    topics: core.topics,
    url: core.url
  }
  if (!includeSettings) return base
  const rules = rng
    .sample(COMMUNITY_RULES, rng.range(3, 8))
    .map(([title, description]) => ({ title, description }))
  const moderators = Array.from(
    { length: rng.range(2, 6) },
    (_, r) => forumUserCore(ctx, userOfSlot(ctx, c, r)).username
  )
  return { ...base, rules, moderators: [...new Set(moderators)] }
}

export const communityDescription = (core: CommunityCore): string =>
  `A community for everything ${core.topics[0]}: news, questions and discussion. ` +
  `Related: ${core.topics.slice(1).join(", ") || "none"}.`

/** Community facts for all communities (about 2,000 small records), built on first search. */
export interface CommunityTable {
  readonly cores: ReadonlyArray<CommunityCore>
  readonly tokens: ReadonlyArray<ReadonlyArray<string>>
  readonly byTopic: ReadonlyMap<string, ReadonlyArray<number>>
}

/** Each world's table, built at its first use. */
const communityTables = new WeakMap<Ctx, CommunityTable>()

export const communityTable = (ctx: Ctx): CommunityTable => {
  const built = communityTables.get(ctx)
  if (built !== undefined) return built
  const cores = Array.from({ length: SIZES.communities }, (_, c) => communityCore(ctx, c))
  const byTopic = new Map<string, Array<number>>()
  for (const core of cores)
    for (const t of core.topics) byTopic.set(t, [...(byTopic.get(t) ?? []), core.index])
  for (const list of byTopic.values())
    list.sort((a, b) => cores[b]!.subscribers - cores[a]!.subscribers || a - b)
  const tokens = cores.map((c) => [...new Set([...tokenize(c.name), ...tokenize(c.title), ...c.topics])])
  const table: CommunityTable = { cores, tokens, byTopic }
  communityTables.set(ctx, table)
  return table
}

// ---------------------------------------------------------------- users

/** The user holding poster slot `r` of community `c`. */
export const userOfSlot = (ctx: Ctx, c: number, r: number): number =>
  ctx.perm.slots.forward(c * SLOTS_PER_COMMUNITY + r) % SIZES.forumUsers

/** The (community, slot) pairs a user posts through: exactly SLOTS_PER_USER of them. */
export const slotsOfUser = (ctx: Ctx, u: number): Array<readonly [community: number, slot: number]> =>
  Array.from({ length: SLOTS_PER_USER }, (_, j) => {
    const s = ctx.perm.slots.inverse(u + j * SIZES.forumUsers)
    return [Math.floor(s / SLOTS_PER_COMMUNITY), s % SLOTS_PER_COMMUNITY] as const
  })

export interface ForumUserCore {
  readonly index: number
  readonly id: string
  readonly username: string
  readonly adj: number
  readonly noun: number
  readonly postKarma: number
  readonly commentKarma: number
  readonly createdMs: number
  readonly profileUrl: string
}

export const forumUserCore = (ctx: Ctx, u: number): ForumUserCore => {
  const k = ctx.k.fuser
  const combo = ctx.perm.fuserName.forward(u)
  const adj = Math.floor(combo / (USER_NOUN.length * 10_000))
  const noun = Math.floor(combo / 10_000) % USER_NOUN.length
  const digits = String(combo % 10_000).padStart(4, "0")
  const a = USER_ADJ[adj]!
  const n = USER_NOUN[noun]!
  const style = hash3(k, u, 1) % 4
  const username =
    style === 0
      ? `${capitalize(a)}${capitalize(n)}${digits}`
      : style === 1
        ? `${a}_${n}_${digits}`
        : style === 2
          ? `${capitalize(a)}-${capitalize(n)}-${digits}`
          : `${a}${n}${digits}`
  return {
    index: u,
    id: (ctx.perm.fuserId.forward(u) + 36 ** 5).toString(36),
    username,
    adj,
    noun,
    postKarma: pareto(u3(k, u, 2), 1, 0.75, 5_000_000),
    commentKarma: pareto(u3(k, u, 3), 1, 0.75, 5_000_000),
    // Before the oldest post of the world's ~5-year window, so no user posts before joining.
    createdMs: Date.UTC(2010, 0, 1) + Math.floor(u3(k, u, 4) * 11.5 * YEAR_MS),
    profileUrl: `https://${ctx.hosts.forum}/user/${username}/`
  }
}

export const forumUserIndexByName = (ctx: Ctx, raw: string): number | undefined => {
  const name = raw
    .trim()
    .replace(/^\/?u(ser)?\//i, "")
    .replace(/\/$/, "")
  const m = /^([A-Za-z_-]+?)(\d{4})$/.exec(name)
  if (m === null) return undefined
  const letters = m[1]!.replace(/[-_]/g, "").toLowerCase()
  for (let i = 1; i < letters.length; i++) {
    const adj = ADJ_INDEX.get(letters.slice(0, i))
    const noun = adj === undefined ? undefined : NOUN_INDEX.get(letters.slice(i))
    if (adj === undefined || noun === undefined) continue
    const u = ctx.perm.fuserName.inverse((adj * USER_NOUN.length + noun) * 10_000 + Number(m[2]))
    if (u < SIZES.forumUsers && forumUserCore(ctx, u).username.toLowerCase() === name.toLowerCase()) return u
  }
  return undefined
}

export const userSummary = (ctx: Ctx, u: number): ForumUserSummary => {
  const c = forumUserCore(ctx, u)
  return {
    kind: "user",
    id: c.id,
    username: c.username,
    karma: c.postKarma + c.commentKarma,
    created_at: iso(c.createdMs),
    permalink: c.profileUrl
  }
}
