import type { MicroblogSort, Tweet } from "../../contract/records.ts"
import type { Page } from "../contract.ts"
import type { Ctx } from "./context.ts"
import {
  InvalidCursor as INVALID,
  type InvalidCursor,
  page,
  scopeOf,
  slicePage,
  startOffset
} from "./cursor.ts"
import {
  accountCore,
  accountFollowers,
  accountTopics,
  TIMELINE_KEYS,
  TWEET_BITS,
  timelineTweet,
  tweetId,
  tweetKeyOf
} from "./microblog.ts"
import { hash3, pareto, rngFor, u3 } from "./random.ts"
import { SIZES } from "./sizes.ts"
import { sortDesc } from "./sort.ts"
import { DAY_MS, EPOCH_MS, iso } from "./text.ts"
import { forumComment, render, tweetPieces } from "./text-gen.ts"

/**
 * Replies live in their conversation: reply j of the timeline tweet with key p has the key
 * TIMELINE_KEYS + p * REPLIES_MAX + j, so getTweet finds it by id and knows its parent. A tweet
 * lists min(its `replies` count, REPLIES_MAX) replies; a reply has none of its own. Replies are
 * not on their author's timeline and not in search.
 */
export const REPLIES_PAGE = 20
export const REPLIES_MAX = 100
const MIN_DELAY_MS = 30_000
const MAX_DELAY_MS = 14 * DAY_MS

interface Parent {
  readonly key: number
  readonly tweet: Tweet
  readonly createdMs: number
  readonly topics: ReadonlyArray<string>
  readonly count: number
}

/** The timeline tweet `t` of `key` as the parent of a conversation. */
const asParent = (ctx: Ctx, key: number, t: Tweet): Parent => ({
  key,
  tweet: t,
  createdMs: Date.parse(t.created_at),
  topics: accountTopics(ctx, Math.floor(key / TWEET_BITS)),
  count: Math.min(t.replies, REPLIES_MAX)
})

const replyKey = (parent: Parent, j: number): number => TIMELINE_KEYS + parent.key * REPLIES_MAX + j

const replier = (ctx: Ctx, key: number): number => hash3(ctx.k.reply, key, 1) % SIZES.microblogAccounts

/** Most replies come within hours; none before the parent or after the world's "now". */
const replyTime = (ctx: Ctx, parent: Parent, key: number): number => {
  const window = Math.max(0, Math.min(MAX_DELAY_MS, EPOCH_MS - parent.createdMs - MIN_DELAY_MS))
  return parent.createdMs + MIN_DELAY_MS + Math.floor(u3(ctx.k.reply, key, 2) ** 4 * window)
}

/** Replies draw likes from the replier's reach and the parent's. */
const replyLikes = (ctx: Ctx, parent: Parent, key: number): number =>
  Math.floor(
    pareto(u3(ctx.k.reply, key, 3), 1, 1.2, 1_000_000) *
      (0.01 * accountFollowers(ctx, replier(ctx, key)) ** 0.6 + 0.05 * parent.tweet.likes ** 0.5)
  )

const reply = (ctx: Ctx, parent: Parent, j: number): Tweet => {
  const key = replyKey(parent, j)
  const c = accountCore(ctx, replier(ctx, key))
  const created = replyTime(ctx, parent, key)
  const id = tweetId(ctx, created, key)
  const rng = rngFor(ctx.k.reply, key, 1)
  const body =
    c.lang === "en"
      ? forumComment(rngFor(ctx.k.reply, key), parent.topics)
      : render(tweetPieces(rngFor(ctx.k.reply, key), parent.topics, c.lang))
  const likes = replyLikes(ctx, parent, key)
  return {
    id,
    text: `@${parent.tweet.author.handle} ${body}`,
    created_at: iso(created),
    author: { id: c.id, handle: c.handle, name: c.name },
    likes,
    reposts: Math.floor(likes * 0.05 * rng.next()),
    replies: 0,
    quotes: Math.floor(likes * 0.01 * rng.next()),
    views: Math.floor(likes * (30 + 100 * rng.next()) + c.followers * 0.01 * rng.next() + 5),
    lang: c.lang,
    is_repost: false,
    is_reply: true,
    url: `${c.url}/status/${id}`
  }
}

/** The tweet of a key: a timeline tweet, or reply j of a timeline tweet that has at least j + 1. */
const tweetAt = (ctx: Ctx, key: number): Tweet | undefined => {
  if (key < TIMELINE_KEYS) return timelineTweet(ctx, key)
  const parentKey = Math.floor((key - TIMELINE_KEYS) / REPLIES_MAX)
  const j = (key - TIMELINE_KEYS) % REPLIES_MAX
  const t = timelineTweet(ctx, parentKey)
  if (t === undefined) return undefined
  const parent = asParent(ctx, parentKey, t)
  return j < parent.count ? reply(ctx, parent, j) : undefined
}

/** A tweet by id, in a timeline or a conversation; undefined for unknown or forged ids. */
export const getTweet = (ctx: Ctx, id: string): Tweet | undefined => {
  const key = tweetKeyOf(ctx, id)
  const t = key === undefined ? undefined : tweetAt(ctx, key)
  return t?.id === id ? t : undefined
}

/** A page of a tweet's replies, `top` (most liked first) or `latest` (newest first); undefined for no such tweet. */
export const getTweetReplies = (
  ctx: Ctx,
  id: string,
  sort: MicroblogSort,
  cursor: string | undefined
): Page<Tweet> | InvalidCursor | undefined => {
  const key = tweetKeyOf(ctx, id)
  const t = key === undefined ? undefined : tweetAt(ctx, key)
  if (key === undefined || t?.id !== id) return undefined
  const scope = scopeOf(ctx.seedKey, "getTweetReplies", [key, sort])
  const offset = startOffset(cursor, scope)
  if (offset === undefined) return INVALID
  if (key >= TIMELINE_KEYS) return page([], undefined, scope)
  const parent = asParent(ctx, key, t)
  const rank = (j: number) => (sort === "top" ? replyLikes : replyTime)(ctx, parent, replyKey(parent, j))
  const ranked = sortDesc(
    Array.from({ length: parent.count }, (_, j) => j),
    rank
  )
  return slicePage(ranked.length, offset, REPLIES_PAGE, REPLIES_MAX, scope, (i) =>
    reply(ctx, parent, ranked[i]!)
  )
}
