import type { ForumRange, ForumSearchItem, ForumSort } from "../../contract/records.ts"
import type { ForumSearchQuery, Page } from "../contract.ts"
import type { Ctx } from "./context.ts"
import { InvalidCursor as INVALID, type InvalidCursor, scopeOf, slicePage, startOffset } from "./cursor.ts"
import { FORUM_PAGE, hotScore, inRange } from "./forum.ts"
import {
  communityDescription,
  communityTable,
  forumUserCore,
  forumUserIndexByName,
  userSummary
} from "./forum-core.ts"
import {
  type CommentCheap,
  commentCheap,
  commentHas,
  commentSummary,
  type PostCheap,
  postCheap,
  postSummary,
  titleHas
} from "./forum-posts.ts"
import { Lru } from "./lru.ts"
import { hash2, unit } from "./random.ts"
import { SIZES, TOPIC_INDEX } from "./sizes.ts"
import { sortDesc } from "./sort.ts"
import { allMatch, EPOCH_MS, iso, queryTokens, YEAR_MS } from "./text.ts"
import { VOCABULARY } from "./text-gen.ts"
import { USER_ADJ, USER_NOUN } from "./words-text.ts"

/** Upstream depth cap per query, as the platform's own search has. */
export const FORUM_SEARCH_CAP = 250
const POST_BUDGET = 5000
const COMMENT_BUDGET = 4000

/** Ranked results are kept as thunks: only the requested page is ever rendered. */
type Lazy = () => ForumSearchItem

const cache = new WeakMap<Ctx, Lru<ReadonlyArray<Lazy>>>()

export const forumSearch = (
  ctx: Ctx,
  q: ForumSearchQuery,
  cursor: string | undefined
): Page<ForumSearchItem> | InvalidCursor => {
  const tokens = queryTokens(q.query)
  const type = q.type ?? "posts"
  const sort = q.sort ?? "relevance"
  const range = type === "posts" ? (q.range ?? "all_time") : "all_time"
  const scope = scopeOf(ctx.seedKey, "forumSearch", [tokens, type, sort, range])
  const offset = startOffset(cursor, scope)
  if (offset === undefined) return INVALID
  let lru = cache.get(ctx)
  if (lru === undefined) {
    lru = new Lru(8)
    cache.set(ctx, lru)
  }
  const items = lru.get(JSON.stringify([tokens, type, sort, range]), () =>
    tokens.length === 0 ||
    ((type === "posts" || type === "comments") && !tokens.every((t) => VOCABULARY.has(t)))
      ? []
      : type === "posts"
        ? searchPosts(ctx, tokens, sort, range, scope)
        : type === "comments"
          ? searchComments(ctx, tokens, sort, scope)
          : type === "communities"
            ? searchCommunities(ctx, tokens)
            : searchUsers(ctx, tokens)
  )
  return slicePage(items.length, offset, FORUM_PAGE, FORUM_SEARCH_CAP, scope, (i) => items[i]!())
}

/**
 * Communities worth scanning: those about a topic the query names, biggest first; a query that
 * names no topic scans a sample seeded by the query itself, so it is stable and still genuine.
 */
const candidateCommunities = (
  ctx: Ctx,
  tokens: ReadonlyArray<string>,
  scope: number,
  max: number
): Array<number> => {
  const table = communityTable(ctx)
  const topical = tokens.filter((t) => TOPIC_INDEX.has(t))
  if (topical.length > 0) {
    const lists = topical.map((t) => table.byTopic.get(t) ?? [])
    const seen = new Set<number>()
    for (let r = 0; seen.size < max && lists.some((l) => r < l.length); r++)
      for (const l of lists) if (r < l.length && seen.size < max) seen.add(l[r]!)
    return [...seen]
  }
  const out = new Set<number>()
  for (let n = 0; out.size < Math.min(max, SIZES.communities); n++)
    out.add(hash2(scope, n) % SIZES.communities)
  return [...out]
}

/** Relevance: a stable per-query jitter blended with votes and recency. */
const relevance = (scope: number, key: number, upvotes: number, createdMs: number): number =>
  unit(hash2(scope, key)) + 0.3 * Math.log10(upvotes + 1) + Math.max(0, 1 - (EPOCH_MS - createdMs) / YEAR_MS)

const postOrder = (sort: ForumSort, scope: number): ((p: PostCheap) => number) =>
  sort === "top"
    ? (p) => p.upvotes
    : sort === "new"
      ? (p) => p.createdMs
      : sort === "hot"
        ? hotScore
        : sort === "comment_count"
          ? (p) => p.comments
          : (p) => relevance(scope, p.key, p.upvotes, p.createdMs)

const searchPosts = (
  ctx: Ctx,
  tokens: ReadonlyArray<string>,
  sort: ForumSort,
  range: ForumRange,
  scope: number
) => {
  const comms = candidateCommunities(ctx, tokens, scope, 60)
  const cores = communityTable(ctx).cores
  const perCommunity = Math.max(50, Math.floor(POST_BUDGET / Math.max(1, comms.length)))
  const candidates: Array<PostCheap> = []
  for (const c of comms) {
    const core = cores[c]!
    for (let j = core.postCount - 1; j >= Math.max(0, core.postCount - perCommunity); j--) {
      const p = postCheap(ctx, core, j)
      if (inRange(p.createdMs, range)) candidates.push(p)
    }
  }
  const out: Array<Lazy> = []
  for (const p of sortDesc(candidates, postOrder(sort, scope))) {
    const core = cores[p.c]!
    if (titleHas(ctx, core, p.key, tokens)) out.push(() => postSummary(ctx, p, core))
    if (out.length >= FORUM_SEARCH_CAP) break
  }
  return out
}

/** Comment search has no time window upstream; `hot` and `comment_count` fall back to `top`. */
const searchComments = (ctx: Ctx, tokens: ReadonlyArray<string>, sort: ForumSort, scope: number) => {
  const comms = candidateCommunities(ctx, tokens, scope, 30)
  const cores = communityTable(ctx).cores
  const perCommunity = Math.max(100, Math.floor(COMMENT_BUDGET / Math.max(1, comms.length)))
  const candidates: Array<CommentCheap> = []
  for (const c of comms) {
    const core = cores[c]!
    let taken = 0
    for (let j = core.postCount - 1; j >= 0 && taken < perCommunity; j--) {
      const p = postCheap(ctx, core, j)
      for (let i = 0; i < p.comments && taken < perCommunity; i++, taken++)
        candidates.push(commentCheap(ctx, p, i))
    }
  }
  const key =
    sort === "new"
      ? (c: CommentCheap) => c.createdMs
      : sort === "relevance"
        ? (c: CommentCheap) => relevance(scope, c.key, c.upvotes, c.createdMs)
        : (c: CommentCheap) => c.upvotes
  const out: Array<Lazy> = []
  for (const cm of sortDesc(candidates, key)) {
    const core = cores[cm.post.c]!
    if (commentHas(ctx, core, cm.key, tokens)) out.push(() => commentSummary(ctx, cm, core))
    if (out.length >= FORUM_SEARCH_CAP) break
  }
  return out
}

const searchCommunities = (ctx: Ctx, tokens: ReadonlyArray<string>): Array<Lazy> => {
  const table = communityTable(ctx)
  const joined = tokens.join("")
  return table.cores
    .filter((c, i) => allMatch(tokens, table.tokens[i]!, true) || c.name.toLowerCase() === joined)
    .sort(
      (a, b) =>
        Number(b.name.toLowerCase() === joined) - Number(a.name.toLowerCase() === joined) ||
        b.subscribers - a.subscribers
    )
    .slice(0, FORUM_SEARCH_CAP)
    .map((c) => () => ({
      kind: "community" as const,
      id: c.id,
      name: c.name,
      title: c.title,
      description: communityDescription(c),
      subscribers: c.subscribers,
      created_at: iso(c.createdMs),
      nsfw: c.nsfw,
      permalink: c.url
    }))
}

/**
 * Usernames are adjective + noun + 4 digits, so the users matching a word are found by walking
 * that word's name combinations through the inverse permutation instead of scanning everyone.
 */
const searchUsers = (ctx: Ctx, tokens: ReadonlyArray<string>): Array<Lazy> => {
  if (tokens.length === 1) {
    const exact = forumUserIndexByName(ctx, tokens[0]!)
    if (exact !== undefined) return [() => userSummary(ctx, exact)]
  }
  const adjs = USER_ADJ.flatMap((w, i) => (tokens.includes(w) ? [i] : []))
  const nouns = USER_NOUN.flatMap((w, i) => (tokens.includes(w) ? [i] : []))
  const digits = tokens.filter((t) => /^\d{4}$/.test(t)).map(Number)
  const explained = adjs.length + nouns.length + digits.length
  if (explained < tokens.length || adjs.length > 1 || nouns.length > 1 || digits.length > 1) return []
  const aList = adjs.length > 0 ? adjs : USER_ADJ.map((_, i) => i)
  const nList = nouns.length > 0 ? nouns : USER_NOUN.map((_, i) => i)
  const dList = digits.length > 0 ? digits : Array.from({ length: 10_000 }, (_, d) => d)
  if (aList.length * nList.length * dList.length > 1_000_000) return []
  const found: Array<number> = []
  for (const a of aList)
    for (const n of nList)
      for (const d of dList) {
        const u = ctx.perm.fuserName.inverse((a * USER_NOUN.length + n) * 10_000 + d)
        if (u < SIZES.forumUsers) found.push(u)
      }
  const karma = (u: number) => {
    const c = forumUserCore(ctx, u)
    return c.postKarma + c.commentKarma
  }
  return found
    .map((u) => [u, karma(u)] as const)
    .sort((a, b) => b[1] - a[1] || a[0] - b[0])
    .slice(0, FORUM_SEARCH_CAP)
    .map(
      ([u]) =>
        () =>
          userSummary(ctx, u)
    )
}
