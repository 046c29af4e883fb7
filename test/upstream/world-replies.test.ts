import { Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as R from "../../src/contract/records.ts"
import * as C from "../../src/upstream/contract.ts"
import { makeCtx } from "../../src/upstream/world/context.ts"
import { InvalidCursor, LIMITS, makeWorld, type World } from "../../src/upstream/world/index.ts"
import { accountCore, tweet } from "../../src/upstream/world/microblog.ts"
import { SIZES } from "../../src/upstream/world/sizes.ts"

const SEED = "seed-a"
const ctx = makeCtx(SEED)
const w = makeWorld(SEED)

const ok = <A>(p: C.Page<A> | InvalidCursor | undefined): C.Page<A> => {
  if (p === undefined || p === InvalidCursor) throw new Error(`expected a page, got ${String(p)}`)
  return p
}

/** Every reply of a tweet in one sort order, page by page, with the cursors that led there. */
const allReplies = (world: World, id: string, sort: R.MicroblogSort) => {
  const pages: Array<C.Page<R.Tweet>> = []
  let cursor: string | undefined
  do {
    const page = ok(world.getTweetReplies(id, sort, cursor))
    pages.push(page)
    cursor = page.next_cursor ?? undefined
  } while (cursor !== undefined)
  return { pages, replies: pages.flatMap((page) => page.items) }
}

/** Popular tweets, the way a caller meets them: top search results. */
const popular = ["rust", "gaming", "chess", "coffee", "cooking", "music"].flatMap(
  (query) => ok(w.microblogSearch({ query, sort: "top" }, undefined)).items
)
const withReplies = (min: number, max = Number.POSITIVE_INFINITY): R.Tweet => {
  const found = popular.find((t) => t.replies >= min && t.replies <= max)
  if (found === undefined) throw new Error(`no searched tweet with ${min} to ${max} replies`)
  return found
}
const twoPages = withReplies(LIMITS.tweetRepliesPage + 1, LIMITS.tweetRepliesCap)
const beyondCap = withReplies(LIMITS.tweetRepliesCap + 1)
const quiet = popular.find((t) => t.replies === 0)!

describe("tweet replies", () => {
  it("lists as many replies as the tweet's replies count, up to the cap, in pages", () => {
    const { pages, replies } = allReplies(w, twoPages.id, "top")
    expect(replies).toHaveLength(twoPages.replies)
    expect(pages.length).toBe(Math.ceil(twoPages.replies / LIMITS.tweetRepliesPage))
    expect(pages.slice(0, -1).every((page) => page.items.length === LIMITS.tweetRepliesPage)).toBe(true)
    expect(new Set(replies.map((r) => r.id)).size).toBe(replies.length)
    const capped = allReplies(w, beyondCap.id, "latest")
    expect(capped.replies).toHaveLength(LIMITS.tweetRepliesCap)
    expect(capped.pages.at(-1)!.next_cursor).toBeNull()
  })

  it("answers an empty page for a tweet without replies, undefined for no tweet", () => {
    expect(w.getTweetReplies(quiet.id, "top", undefined)).toEqual({ items: [], next_cursor: null })
    expect(w.getTweetReplies("1234567890123456789", "top", undefined)).toBeUndefined()
    expect(w.getTweetReplies("nope", "latest", undefined)).toBeUndefined()
  })

  it("orders top by likes and latest by created_at, the same replies either way", () => {
    const top = allReplies(w, twoPages.id, "top").replies
    const latest = allReplies(w, twoPages.id, "latest").replies
    for (let i = 1; i < top.length; i++) {
      expect(top[i - 1]!.likes).toBeGreaterThanOrEqual(top[i]!.likes)
      expect(latest[i - 1]!.created_at >= latest[i]!.created_at).toBe(true)
    }
    expect(new Set(latest.map((r) => r.id))).toEqual(new Set(top.map((r) => r.id)))
  })

  it("makes each reply a tweet of its own: found by id and URL, after its parent, naming its author", () => {
    const replies = allReplies(w, twoPages.id, "latest").replies
    for (const reply of replies) {
      expect(w.getTweet(reply.id)).toEqual(reply)
      expect(reply.is_reply).toBe(true)
      expect(reply.is_repost).toBe(false)
      expect(reply.text.startsWith(`@${twoPages.author.handle} `)).toBe(true)
      expect(reply.created_at > twoPages.created_at).toBe(true)
      expect(reply.url).toBe(`https://microblog.com/${reply.author.handle}/status/${reply.id}`)
      expect(w.getMicroblogProfile({ id: reply.author.id })?.handle).toBe(reply.author.handle)
      expect(w.resolveMicroblogUrl(reply.url)).toEqual({
        type: "tweet",
        id: reply.id,
        handle: reply.author.handle,
        canonical_url: reply.url
      })
      // A reply has no replies of its own, and says so.
      expect(reply.replies).toBe(0)
      expect(w.getTweetReplies(reply.id, "top", undefined)).toEqual({ items: [], next_cursor: null })
    }
    expect(
      Schema.decodeUnknownSync(C.Page(R.Tweet))(ok(w.getTweetReplies(twoPages.id, "top", undefined)))
    ).toEqual(ok(w.getTweetReplies(twoPages.id, "top", undefined)))
  })

  it("is deterministic per seed and unknown to another seed's world", () => {
    const twin = makeWorld(SEED)
    expect(allReplies(twin, twoPages.id, "top")).toEqual(allReplies(w, twoPages.id, "top"))
    const other = makeWorld("seed-b")
    expect(other.getTweetReplies(twoPages.id, "top", undefined)).toBeUndefined()
    const reply = ok(w.getTweetReplies(twoPages.id, "top", undefined)).items[0]!
    expect(other.getTweet(reply.id)).toBeUndefined()
  })

  it("refuses cursors of another tweet, sort, method or world, and forged reply ids", () => {
    const cursor = ok(w.getTweetReplies(twoPages.id, "top", undefined)).next_cursor!
    expect(w.getTweetReplies(twoPages.id, "latest", cursor)).toBe(InvalidCursor)
    expect(w.getTweetReplies(beyondCap.id, "top", cursor)).toBe(InvalidCursor)
    expect(w.getTweetReplies(twoPages.id, "top", "forged")).toBe(InvalidCursor)
    const timeline = ok(w.getTweets(twoPages.author.handle, true, undefined)).next_cursor!
    expect(w.getTweetReplies(twoPages.id, "top", timeline)).toBe(InvalidCursor)
    const reply = ok(w.getTweetReplies(twoPages.id, "top", undefined)).items[0]!
    const bumped = reply.id.slice(0, -1) + (reply.id.endsWith("0") ? "1" : "0")
    expect(w.getTweet(bumped)).toBeUndefined()
  })

  it("any timeline tweet lists min(replies, cap) replies, each found again by id", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: SIZES.microblogAccounts - 1 }), fc.nat(), (a, k) => {
        const core = accountCore(ctx, a)
        const t = tweet(ctx, core, k % core.timeline)
        const first = ok(w.getTweetReplies(t.id, "top", undefined))
        const expected = Math.min(t.replies, LIMITS.tweetRepliesCap)
        expect(first.items).toHaveLength(Math.min(expected, LIMITS.tweetRepliesPage))
        expect(first.next_cursor === null).toBe(expected <= LIMITS.tweetRepliesPage)
        for (const reply of first.items) expect(w.getTweet(reply.id)).toEqual(reply)
      }),
      { numRuns: 200 }
    )
  })
})
