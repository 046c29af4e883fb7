import type { MicroblogProfile, Tweet } from "../../contract/records.ts"
import type { MicroblogProfileRef, Page } from "../contract.ts"
import type { Ctx } from "./context.ts"
import { InvalidCursor as INVALID, type InvalidCursor, page, scopeOf, startOffset } from "./cursor.ts"
import { decodeSnowflakeLow, encodeSnowflake, parseDigits } from "./ids.ts"
import { hash3, pareto, rngFor, u3 } from "./random.ts"
import { SIZES, TOPIC_GROUP_OF, TOPICS } from "./sizes.ts"
import { allMatch, DAY_MS, EPOCH_MS, iso, tokenize, YEAR_MS } from "./text.ts"
import { piecesHave, render, tweetPieces } from "./text-gen.ts"
import { CITIES, FIRST_NAMES, LAST_NAMES, ROLES } from "./words.ts"
import { TOPIC_GROUPS } from "./words-text.ts"

export const TWEETS_PAGE = 20
const TIMELINE_MAX = 1000
/** A timeline tweet's key is `account * TWEET_BITS + k`; keys from TIMELINE_KEYS on are replies. */
export const TWEET_BITS = 1024
export const TIMELINE_KEYS = SIZES.microblogAccounts * TWEET_BITS
const ID_OFFSET = 100_000_000
/** The microblog's own id epoch (2010-11-04), as its snowflake ids use. */
const TW_EPOCH_S = 1_288_834_974
const LANGS = ["es", "de", "fr", "pt"]

/** The numeric side of an account: enough to walk and test its timeline without naming it. */
export interface AccountStats {
  readonly index: number
  readonly topics: ReadonlyArray<string>
  readonly lang: string
  readonly followers: number
  readonly tweetCount: number
  readonly createdMs: number
  /** Tweets reachable through the timeline: the newest ones, at most TIMELINE_MAX and ~5 years. */
  readonly timeline: number
  readonly newestAgeMs: number
  readonly intervalMs: number
}

export interface AccountCore extends AccountStats {
  readonly id: string
  readonly handle: string
  readonly name: string
  readonly url: string
}

/** An account's interests: one topic and a neighbour from its group (the same topic twice collapses). */
export const accountTopics = (ctx: Ctx, a: number): ReadonlyArray<string> => {
  const topic = hash3(ctx.k.account, a, 3) % TOPICS.length
  const group = TOPIC_GROUPS[TOPIC_GROUP_OF[topic]!]!.topics
  const second = group[hash3(ctx.k.account, a, 4) % group.length]!
  return second === TOPICS[topic] ? [second] : [TOPICS[topic]!, second]
}

export const accountFollowers = (ctx: Ctx, a: number): number =>
  pareto(u3(ctx.k.account, a, 12), 3, 0.55, 150_000_000)

export const accountStats = (ctx: Ctx, a: number): AccountStats => {
  const k = ctx.k.account
  const tweetCount = pareto(u3(k, a, 9), 20, 0.6, 300_000)
  const createdMs = Date.UTC(2008, 0, 1) + Math.floor(u3(k, a, 10) * 17 * YEAR_MS)
  const newestAgeMs = Math.floor(u3(k, a, 11) ** 4 * 400 * DAY_MS)
  const intervalMs = Math.max(
    300_000,
    Math.min(60 * DAY_MS, (EPOCH_MS - createdMs - newestAgeMs) / tweetCount)
  )
  const window = Math.min(4.8 * YEAR_MS, EPOCH_MS - createdMs) - newestAgeMs
  return {
    index: a,
    topics: accountTopics(ctx, a),
    lang: u3(k, a, 7) < 0.9 ? "en" : LANGS[hash3(k, a, 8) % LANGS.length]!,
    followers: accountFollowers(ctx, a),
    tweetCount,
    createdMs,
    // The timeline reaches back at most ~5 years, like every date of the world.
    timeline: Math.min(tweetCount, TIMELINE_MAX, Math.max(1, Math.floor(window / intervalMs))),
    newestAgeMs,
    intervalMs
  }
}

export const accountCore = (ctx: Ctx, a: number): AccountCore => {
  const k = ctx.k.account
  const stats = accountStats(ctx, a)
  const first = FIRST_NAMES[hash3(k, a, 1) % FIRST_NAMES.length]!
  const last = LAST_NAMES[hash3(k, a, 2) % LAST_NAMES.length]!
  const f = first.toLowerCase()
  const l = last.toLowerCase()
  const style = hash3(k, a, 5) % 5
  const camel = hash3(k, a, 6) % 2 === 1
  const cap = (s: string) => (camel ? s[0]!.toUpperCase() + s.slice(1) : s)
  const body = [cap(f) + cap(l), `${f}_${l}`, f[0]! + cap(l), cap(f) + cap(stats.topics[0]!), "the" + cap(f)][
    style
  ]!.slice(0, 10)
  const handle = body + String(ctx.perm.accountHandle.forward(a)).padStart(5, "0")
  return {
    ...stats,
    id: String(ctx.perm.accountId.forward(a) + ID_OFFSET),
    handle,
    name: `${first} ${last}`,
    url: `https://${ctx.hosts.microblog}/${handle}`
  }
}

export const accountIndexByHandle = (ctx: Ctx, raw: string): number | undefined => {
  const handle = raw.trim().replace(/^@/, "")
  if (!/^[A-Za-z0-9_]{6,15}$/.test(handle)) return undefined
  const code = parseDigits(handle.slice(-5), 5)
  if (code === undefined) return undefined
  const a = ctx.perm.accountHandle.inverse(code)
  return a < SIZES.microblogAccounts && accountCore(ctx, a).handle.toLowerCase() === handle.toLowerCase()
    ? a
    : undefined
}

export const accountIndexById = (ctx: Ctx, id: string): number | undefined => {
  const n = parseDigits(id, 10)
  if (n === undefined || n < ID_OFFSET || n - ID_OFFSET >= ctx.perm.accountId.size) return undefined
  const a = ctx.perm.accountId.inverse(n - ID_OFFSET)
  return a < SIZES.microblogAccounts && accountCore(ctx, a).id === id ? a : undefined
}

export const accountIndex = (ctx: Ctx, ref: MicroblogProfileRef): number | undefined =>
  "handle" in ref ? accountIndexByHandle(ctx, ref.handle) : accountIndexById(ctx, ref.id)

export const profile = (ctx: Ctx, a: number): MicroblogProfile => {
  const c = accountCore(ctx, a)
  const rng = rngFor(ctx.k.account, a)
  const role = rng.pick(ROLES).replace(/^!/, "")
  const k = ctx.k.account
  return {
    id: c.id,
    handle: c.handle,
    name: c.name,
    bio: `${role}. Into ${c.topics.join(" & ")}. Opinions my own.`,
    location: rng.chance(0.2) ? "" : CITIES[hash3(k, a, 13) % CITIES.length]!.split(",")[0]!,
    followers: c.followers,
    following: 10 + pareto(u3(k, a, 14), 10, 1.2, 8000),
    tweet_count: c.tweetCount,
    created_at: iso(c.createdMs),
    verified: c.followers > 100_000 ? u3(k, a, 15) < 0.8 : u3(k, a, 15) < 0.02,
    url: c.url
  }
}

/** Tweet 0 is the newest; time falls strictly with the number. */
export const tweetTime = (ctx: Ctx, c: AccountStats, k: number): number =>
  EPOCH_MS - c.newestAgeMs - (k + 0.9 * u3(ctx.k.tweet, c.index * TWEET_BITS + k, 1)) * c.intervalMs

export const isReply = (ctx: Ctx, a: number, k: number): boolean =>
  u3(ctx.k.tweet, a * TWEET_BITS + k, 2) < 0.2

const isRepost = (ctx: Ctx, key: number): boolean => u3(ctx.k.tweet, key, 3) < 0.1

const mentionOf = (ctx: Ctx, c: AccountStats, k: number): string | undefined => {
  const key = c.index * TWEET_BITS + k
  const reply = isReply(ctx, c.index, k)
  if (!reply && !isRepost(ctx, key)) return undefined
  const other = accountCore(ctx, hash3(ctx.k.tweet, key, 4) % SIZES.microblogAccounts).handle
  return reply ? `@${other}` : `RT @${other}:`
}

const bodyPieces = (ctx: Ctx, c: AccountStats, k: number) =>
  tweetPieces(rngFor(ctx.k.tweet, c.index * TWEET_BITS + k), c.topics, c.lang)

export const tweetTextOf = (ctx: Ctx, c: AccountStats, k: number): string => {
  const body = render(bodyPieces(ctx, c, k))
  const mention = mentionOf(ctx, c, k)
  return mention === undefined ? body : `${mention} ${body}`
}

/** Whether the tweet's text has every term; the mention is looked at only for terms the body lacks. */
export const tweetHas = (ctx: Ctx, c: AccountStats, k: number, tokens: ReadonlyArray<string>): boolean => {
  const pieces = bodyPieces(ctx, c, k)
  const missing = tokens.filter((t) => !piecesHave(pieces, [t]))
  if (missing.length === 0) return true
  const mention = mentionOf(ctx, c, k)
  return mention !== undefined && allMatch(missing, tokenize(mention), false)
}

/** Likes alone, for ranking by engagement before a tweet is built. */
export const tweetLikes = (ctx: Ctx, c: AccountStats, k: number): number =>
  Math.floor(
    pareto(u3(ctx.k.tweet, c.index * TWEET_BITS + k, 5), 1, 1.1, 1_000_000) *
      (0.02 * c.followers ** 0.6 + 0.3)
  )

export const tweet = (ctx: Ctx, c: AccountCore, k: number, text = tweetTextOf(ctx, c, k)): Tweet => {
  const key = c.index * TWEET_BITS + k
  const created = tweetTime(ctx, c, k)
  const id = tweetId(ctx, created, key)
  const rng = rngFor(ctx.k.tweet, key, 1)
  const reply = isReply(ctx, c.index, k)
  const likes = tweetLikes(ctx, c, k)
  return {
    id,
    text,
    created_at: iso(created),
    author: { id: c.id, handle: c.handle, name: c.name },
    likes,
    reposts: Math.floor(likes * 0.15 * rng.next()),
    replies: Math.floor(likes * 0.06 * rng.next()),
    quotes: Math.floor(likes * 0.02 * rng.next()),
    views: Math.floor(likes * (40 + 200 * rng.next()) + c.followers * 0.02 * rng.next() + 10),
    lang: c.lang,
    is_repost: !reply && isRepost(ctx, key),
    is_reply: reply,
    url: `${c.url}/status/${id}`
  }
}

/** The key a tweet id carries (its low 32 bits, unpermuted); the id itself is checked by its owner. */
export const tweetKeyOf = (ctx: Ctx, id: string): number | undefined => {
  const low = decodeSnowflakeLow(id)
  return low === undefined ? undefined : ctx.perm.tweetKey.inverse(low)
}

export const tweetId = (ctx: Ctx, createdMs: number, key: number): string =>
  encodeSnowflake(Math.floor(createdMs / 1000), TW_EPOCH_S, ctx.perm.tweetKey.forward(key))

/** The timeline tweet of a key below TIMELINE_KEYS, or undefined past its account's timeline. */
export const timelineTweet = (ctx: Ctx, key: number): Tweet | undefined => {
  const a = Math.floor(key / TWEET_BITS)
  const k = key % TWEET_BITS
  if (a >= SIZES.microblogAccounts) return undefined
  const c = accountCore(ctx, a)
  return k < c.timeline ? tweet(ctx, c, k) : undefined
}

/** A numeric identifier is a user id; anything else is a handle. */
export const getTweets = (
  ctx: Ctx,
  handleOrId: string,
  includeReplies: boolean,
  cursor: string | undefined
): Page<Tweet> | InvalidCursor | undefined => {
  const a = /^\d+$/.test(handleOrId)
    ? accountIndexById(ctx, handleOrId)
    : accountIndexByHandle(ctx, handleOrId)
  if (a === undefined) return undefined
  const scope = scopeOf(ctx.seedKey, "getTweets", [a, includeReplies])
  const offset = startOffset(cursor, scope)
  if (offset === undefined) return INVALID
  const c = accountCore(ctx, a)
  const items: Array<Tweet> = []
  let k = offset
  for (; k < c.timeline && items.length < TWEETS_PAGE; k++)
    if (includeReplies || !isReply(ctx, a, k)) items.push(tweet(ctx, c, k))
  while (k < c.timeline && !includeReplies && isReply(ctx, a, k)) k++
  return page(items, k < c.timeline ? k : undefined, scope)
}
