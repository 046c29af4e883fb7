import type { Tweet } from "../../contract/records.ts"
import type { MicroblogSearchQuery, Page } from "../contract.ts"
import type { Ctx } from "./context.ts"
import { InvalidCursor as INVALID, type InvalidCursor, scopeOf, slicePage, startOffset } from "./cursor.ts"
import { Lru } from "./lru.ts"
import {
  type AccountStats,
  accountCore,
  accountFollowers,
  accountIndexByHandle,
  accountStats,
  accountTopics,
  TWEETS_PAGE,
  tweet,
  tweetHas,
  tweetLikes,
  tweetTime
} from "./microblog.ts"
import { hash2 } from "./random.ts"
import { SIZES, TOPIC_INDEX } from "./sizes.ts"
import { sortDesc } from "./sort.ts"
import { queryTokens } from "./text.ts"
import { VOCABULARY } from "./text-gen.ts"

export const MICROBLOG_SEARCH_CAP = 250
const MAX_ACCOUNTS = 400
const GENERATION_BUDGET = 3000
const TOP_POOL = 600

/** Accounts per topic, most-followed first: about 40,000 ints for 20,000 accounts, built once. */
export const accountsByTopic = (ctx: Ctx): ReadonlyMap<string, ReadonlyArray<number>> => {
  if (ctx.cache.accountsByTopic !== undefined) return ctx.cache.accountsByTopic
  const map = new Map<string, Array<number>>()
  const followers = new Float64Array(SIZES.microblogAccounts)
  for (let a = 0; a < SIZES.microblogAccounts; a++) {
    followers[a] = accountFollowers(ctx, a)
    for (const t of accountTopics(ctx, a)) {
      const list = map.get(t)
      if (list === undefined) map.set(t, [a])
      else list.push(a)
    }
  }
  for (const list of map.values()) list.sort((x, y) => followers[y]! - followers[x]! || x - y)
  ctx.cache.accountsByTopic = map
  return map
}

const candidates = (ctx: Ctx, tokens: ReadonlyArray<string>, scope: number): Array<number> => {
  const topical = tokens.filter((t) => TOPIC_INDEX.has(t))
  if (topical.length === 0) {
    const out = new Set<number>()
    for (let n = 0; out.size < MAX_ACCOUNTS; n++) out.add(hash2(scope, n) % SIZES.microblogAccounts)
    return [...out]
  }
  const byTopic = accountsByTopic(ctx)
  const seen = new Set<number>()
  for (const t of topical) for (const a of (byTopic.get(t) ?? []).slice(0, MAX_ACCOUNTS)) seen.add(a)
  return [...seen].slice(0, MAX_ACCOUNTS)
}

interface Head {
  readonly c: AccountStats
  k: number
  time: number
}

/** A matching tweet, rendered only if its page is requested. */
interface Hit {
  readonly c: AccountStats
  readonly k: number
}

/** Newest-first merge of the candidates' timelines, keeping the tweets whose text has every term. */
const latestMatches = (
  ctx: Ctx,
  tokens: ReadonlyArray<string>,
  accounts: ReadonlyArray<number>,
  want: number
): Array<Hit> => {
  const heap: Array<Head> = []
  const up = (i: number): void => {
    while (i > 0) {
      const p = (i - 1) >> 1
      if (heap[p]!.time >= heap[i]!.time) return
      ;[heap[p], heap[i]] = [heap[i]!, heap[p]!]
      i = p
    }
  }
  const down = (i: number): void => {
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = i
      if (l < heap.length && heap[l]!.time > heap[m]!.time) m = l
      if (r < heap.length && heap[r]!.time > heap[m]!.time) m = r
      if (m === i) return
      ;[heap[m], heap[i]] = [heap[i]!, heap[m]!]
      i = m
    }
  }
  for (const a of accounts) {
    const c = accountStats(ctx, a)
    if (c.timeline > 0) {
      heap.push({ c, k: 0, time: tweetTime(ctx, c, 0) })
      up(heap.length - 1)
    }
  }
  const out: Array<Hit> = []
  for (let budget = GENERATION_BUDGET; heap.length > 0 && budget > 0 && out.length < want; budget--) {
    const h = heap[0]!
    if (tweetHas(ctx, h.c, h.k, tokens)) out.push({ c: h.c, k: h.k })
    h.k++
    if (h.k < h.c.timeline) {
      h.time = tweetTime(ctx, h.c, h.k)
    } else {
      heap[0] = heap[heap.length - 1]!
      heap.pop()
    }
    if (heap.length > 0) down(0)
  }
  return out
}

const cache = new WeakMap<Ctx, Lru<ReadonlyArray<Hit>>>()

/** `top` ranks the most recent matching pool by likes, as the platform's top tab favours recent posts. */
export const microblogSearch = (
  ctx: Ctx,
  q: MicroblogSearchQuery,
  cursor: string | undefined
): Page<Tweet> | InvalidCursor => {
  const tokens = queryTokens(q.query)
  const sort = q.sort ?? "latest"
  const scope = scopeOf(ctx.seedKey, "microblogSearch", [tokens, sort])
  const offset = startOffset(cursor, scope)
  if (offset === undefined) return INVALID
  let lru = cache.get(ctx)
  if (lru === undefined) {
    lru = new Lru(8)
    cache.set(ctx, lru)
  }
  const items = lru.get(JSON.stringify([tokens, sort]), () => {
    if (
      tokens.length === 0 ||
      !tokens.every((t) => VOCABULARY.has(t) || accountIndexByHandle(ctx, t) !== undefined)
    )
      return []
    const accounts = candidates(ctx, tokens, scope)
    if (sort === "latest") return latestMatches(ctx, tokens, accounts, MICROBLOG_SEARCH_CAP)
    return sortDesc(latestMatches(ctx, tokens, accounts, TOP_POOL), (h) => tweetLikes(ctx, h.c, h.k)).slice(
      0,
      MICROBLOG_SEARCH_CAP
    )
  })
  return slicePage(items.length, offset, TWEETS_PAGE, MICROBLOG_SEARCH_CAP, scope, (i) =>
    tweet(ctx, accountCore(ctx, items[i]!.c.index), items[i]!.k)
  )
}
