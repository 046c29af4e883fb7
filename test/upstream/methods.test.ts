import { Schema } from "effect"
import fc from "fast-check"
import { assert, describe, it } from "vitest"
import { InvalidCursor } from "../../src/upstream/contract.ts"
import {
  type Args,
  type ImplementsUpstream,
  type Method,
  upstreamMethods
} from "../../src/upstream/methods.ts"
import { worldMethods } from "../../src/upstream/Upstream.ts"
import { companyCore } from "../../src/upstream/world/companies.ts"
import { makeCtx } from "../../src/upstream/world/context.ts"
import { communityCore, forumUserCore } from "../../src/upstream/world/forum-core.ts"
import { postCheap, postSummary } from "../../src/upstream/world/forum-posts.ts"
import { makeWorld, type World } from "../../src/upstream/world/index.ts"
import { accountCore, tweet } from "../../src/upstream/world/microblog.ts"
import { personCore } from "../../src/upstream/world/people.ts"
import { SIZES, TOPICS } from "../../src/upstream/world/sizes.ts"

const SEED = "methods"
const ctx = makeCtx(SEED)
const world = worldMethods(makeWorld(SEED))
const index = (n: number) => fc.integer({ min: 0, max: n - 1 })
const pick = <A>(items: ReadonlyArray<A>) => fc.constantFrom(...items)

const called = new Set<Method>()

/**
 * The world's answer to one call, through the wire and back: encoded with the method's answer schema
 * (which checks it against the declaration), as JSON, then decoded to the same value. Its arguments
 * likewise. Returns the answer, for the calls that follow from it.
 */
const conforms = <M extends Method>(method: M, ...args: Args<M>) => {
  called.add(method)
  const declared = upstreamMethods[method]
  const wireArgs = JSON.parse(JSON.stringify(Schema.encodeSync(declared.args)(args)))
  assert.deepStrictEqual(Schema.decodeUnknownSync(declared.args)(wireArgs), args, `${method} args`)
  const answer = world[method](...args)
  const wire = JSON.parse(JSON.stringify(Schema.encodeSync(declared.answer)(answer)))
  assert.deepStrictEqual(Schema.decodeUnknownSync(declared.answer)(wire), answer, method)
  return answer
}

/** The page of a paged answer, or undefined for none or a foreign cursor. */
const pageOf = <P>(answer: P | InvalidCursor | undefined): P | undefined =>
  answer === InvalidCursor ? undefined : answer

const words = ["engineer", "python", "rust", "manager", "ai", "design", "zzqx"]

describe("the world's answers are what the methods declare", () => {
  it("profnet", () => {
    fc.assert(
      fc.property(index(SIZES.people), index(SIZES.companies), fc.integer({ min: 1, max: 6 }), (i, c, n) => {
        const person = personCore(ctx, i)
        const bySlug = conforms("getPerson", { slug: person.slug })
        conforms("getPerson", { urn: person.urn })
        const company = companyCore(ctx, c)
        conforms("getCompany", { slug: company.slug })
        const byDomain = conforms("getCompany", { domain: company.domain })
        conforms("companyByNumericId", company.numericId)
        conforms("closestDomains", company.domain.slice(1), n)
        const personPosts = pageOf(conforms("getPersonPosts", person.slug, undefined))
        conforms("getPersonPosts", person.urn, "forged")
        const companyPosts = pageOf(conforms("getCompanyPosts", company.slug, undefined))
        if (companyPosts?.next_cursor) conforms("getCompanyPosts", company.slug, companyPosts.next_cursor)
        const post = companyPosts?.items[0] ?? personPosts?.items[0]
        if (post !== undefined) {
          conforms("getProfnetPost", post.urn)
          conforms("resolveProfnetUrl", post.url)
        }
        if (bySlug !== undefined) conforms("resolveProfnetUrl", bySlug.profile_url)
        if (byDomain !== undefined) conforms("resolveProfnetUrl", byDomain.url)
      }),
      { numRuns: 60 }
    )
    for (const missing of ["no-such-person-anywhere", ""]) {
      assert.isUndefined(conforms("getPerson", { slug: missing }))
      assert.isUndefined(conforms("getCompany", { domain: missing }))
      assert.isUndefined(conforms("getProfnetPost", missing))
      assert.isUndefined(conforms("resolveProfnetUrl", missing))
      assert.isUndefined(conforms("getCompanyPosts", missing, undefined))
    }
  })

  it("profnet people search", () => {
    fc.assert(
      fc.property(pick(words), fc.integer({ min: 1, max: 25 }), (keywords, limit) => {
        const first = pageOf(conforms("searchPeople", { keywords }, undefined, limit))
        if (first?.next_cursor) conforms("searchPeople", { keywords }, first.next_cursor, limit)
        assert.strictEqual(conforms("searchPeople", { title: keywords }, "forged", limit), InvalidCursor)
      }),
      { numRuns: 15 }
    )
  })

  it("forum", () => {
    fc.assert(
      fc.property(
        index(SIZES.communities),
        fc.nat(),
        index(SIZES.forumUsers),
        fc.boolean(),
        pick(["hot", "new", "top", "rising"] as const),
        pick(["past_week", "all_time"] as const),
        pick([[], ["posts"], ["comments"], ["comments", "posts"]] as const),
        (c, j, u, settings, sort, range, sections) => {
          const community = communityCore(ctx, c)
          conforms("getCommunity", community.name, settings)
          const feed = pageOf(conforms("getCommunityPosts", community.name, sort, range, undefined))
          if (feed?.next_cursor) conforms("getCommunityPosts", community.name, sort, range, feed.next_cursor)
          const summary = postSummary(ctx, postCheap(ctx, community, j % community.postCount), community)
          conforms("getForumPosts", [summary.id, summary.permalink, "no-such-post"])
          const thread = conforms("getThread", summary.id, 1 + (j % 30), sort === "new" ? "new" : "top")
          conforms("resolveForumUrl", summary.permalink)
          const comment = thread?.comments[0]
          if (comment !== undefined) conforms("resolveForumUrl", comment.permalink)
          conforms("getForumUser", forumUserCore(ctx, u).username, sections)
        }
      ),
      { numRuns: 40 }
    )
    assert.isUndefined(conforms("getCommunity", "no-such-community-anywhere", false))
    assert.isUndefined(
      conforms("getCommunityPosts", "no-such-community-anywhere", "hot", "all_time", undefined)
    )
    assert.isUndefined(conforms("getForumUser", "no-such-user-anywhere", []))
    assert.isUndefined(conforms("getThread", "no-such-post", 10, "top"))
  })

  it("forum search, of every type", () => {
    fc.assert(
      fc.property(
        pick([...TOPICS.slice(0, 5), ...words]),
        pick(["posts", "comments", "communities", "users"] as const),
        pick(["relevance", "top", "new"] as const),
        (query, type, sort) => {
          const first = pageOf(conforms("forumSearch", { query, type, sort }, undefined))
          if (first?.next_cursor) conforms("forumSearch", { query, type, sort }, first.next_cursor)
          conforms("forumSearch", { query }, "forged")
        }
      ),
      { numRuns: 20 }
    )
  })

  it("microblog", () => {
    fc.assert(
      fc.property(
        index(SIZES.microblogAccounts),
        fc.nat(),
        fc.boolean(),
        pick(["top", "latest"] as const),
        (a, k, replies, sort) => {
          const account = accountCore(ctx, a)
          conforms("getMicroblogProfile", { handle: account.handle })
          conforms("getMicroblogProfile", { id: account.id })
          const timeline = pageOf(conforms("getTweets", account.handle, replies, undefined))
          if (timeline?.next_cursor) conforms("getTweets", account.id, replies, timeline.next_cursor)
          const one = tweet(ctx, account, k % account.timeline)
          conforms("getTweet", one.id)
          conforms("resolveMicroblogUrl", one.url)
          const thread = pageOf(conforms("getTweetReplies", one.id, sort, undefined))
          if (thread?.next_cursor) conforms("getTweetReplies", one.id, sort, thread.next_cursor)
        }
      ),
      { numRuns: 60 }
    )
    assert.isUndefined(conforms("getTweet", "1"))
    assert.isUndefined(conforms("getTweetReplies", "1", "top", undefined))
    assert.isUndefined(conforms("resolveMicroblogUrl", "https://example.com/"))
  })

  it("microblog search", () => {
    fc.assert(
      fc.property(pick(words), pick(["top", "latest"] as const), (query, sort) => {
        const first = pageOf(conforms("microblogSearch", { query, sort }, undefined))
        if (first?.next_cursor) conforms("microblogSearch", { query, sort }, first.next_cursor)
      }),
      { numRuns: 15 }
    )
  })

  it("a world that lacks a method or mistypes one fails the typecheck", () => {
    type Assert<T extends true> = T
    type NumericTweets = Omit<World, "getTweet"> & { getTweet(id: string): number }
    type NarrowTweets = Omit<World, "getTweet"> & { getTweet(id: "1"): undefined }
    const complete: Assert<ImplementsUpstream<World>> = true
    // @ts-expect-error a world without getTweet
    const missing: Assert<ImplementsUpstream<Omit<World, "getTweet">>> = true
    // @ts-expect-error a getTweet that answers something else than declared
    const numeric: Assert<ImplementsUpstream<NumericTweets>> = true
    // @ts-expect-error a getTweet that does not take every declared argument
    const narrow: Assert<ImplementsUpstream<NarrowTweets>> = true
    assert.deepStrictEqual([complete, missing, numeric, narrow], [true, true, true, true])
  })

  it("every method was called above", () => {
    assert.deepStrictEqual([...called].sort(), Object.keys(upstreamMethods).sort())
  })
})
