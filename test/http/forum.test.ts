import { assert, describe, layer } from "@effect/vitest"
import { Effect, type Schema, SchemaAST } from "effect"
import type { ForumCommentSummary, ForumPostSummary } from "../../src/contract/records.ts"
import { operations } from "../../src/operations/registry.ts"
import type { Page } from "../../src/upstream/contract.ts"
import { makeWorld } from "../../src/upstream/world/index.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { type CallOptions, TestApp, testApp, testSeed } from "../support/app.ts"
import { assertInvalid, operationsById } from "../support/assertions.ts"
import { storeName } from "../support/database.ts"

const world = makeWorld(testSeed)
const freshIp = ipSequence("10.41")
const uuid = () => crypto.randomUUID()
const q = encodeURIComponent

const page = <A>(p: Page<A> | "invalid_cursor" | undefined): Page<A> => {
  if (p === undefined || p === "invalid_cursor") throw new Error(`expected a page, got ${String(p)}`)
  return p
}
const posts = page(world.forumSearch({ query: "python" }, undefined)).items as ReadonlyArray<ForumPostSummary>
const morePosts = page(world.forumSearch({ query: "sourdough" }, undefined))
  .items as ReadonlyArray<ForumPostSummary>
const comment = page(world.forumSearch({ query: "python", type: "comments" }, undefined))
  .items[0] as ForumCommentSummary
const author = world.getForumUser(posts[0]!.author, [])!

/** A trial key on a fresh IP, and a caller for it. */
const trial = Effect.gen(function* () {
  const app = yield* TestApp
  const ip = freshIp()
  const { key } = yield* app.mint(ip)
  const get = (path: string, options: CallOptions = {}) => app.call(path, { key, ip, ...options })
  const usedToday = Effect.map(get("/v1/usage"), (reply) => reply.body.free_tier.used_today as number)
  return { key, ip, get, usedToday }
})

/** A key of a flex account with purchased credits; every call sends a fresh Idempotency-Key. */
const paid = Effect.gen(function* () {
  const app = yield* TestApp
  const minted = yield* paidKey(freshIp(), 1000)
  const ip = minted.ip
  return (path: string, idempotencyKey = uuid()) => app.call(path, { key: minted.key, ip, idempotencyKey })
})

const assertCharged = (reply: { status: number; body: any }, operation: string, credits: number) => {
  assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
  assert.deepStrictEqual(reply.body.cost, { quoted: credits, charged: credits, refunded: 0 })
  assert.strictEqual(reply.body.receipt.operation, operation)
  assert.strictEqual(reply.body.receipt.charged, credits)
}

describe(`forum operations (${storeName})`, () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("forumSearch: a page of post summaries for 6 credits, with the defaults filled", () =>
      Effect.gen(function* () {
        const { get } = yield* trial
        const reply = yield* get("/v1/forum/search?query=python")
        assertCharged(reply, "forumSearch", 6)
        assert.strictEqual(reply.body.kind, "forum_search")
        assert.deepStrictEqual(reply.body.data.results, posts)
        assert.isString(reply.body.data.cursor)
        const explicit = yield* get(
          "/v1/forum/search?query=%20python%20&type=posts&sort=relevance&range=all_time"
        )
        assert.deepStrictEqual(explicit.body.data, reply.body.data)
        const top = yield* get("/v1/forum/search?query=python&sort=top&range=past_year")
        assert.deepStrictEqual(
          top.body.data.results,
          page(world.forumSearch({ query: "python", sort: "top", range: "past_year" }, undefined)).items
        )
      })
    )

    it.effect("forumSearch: comments, communities and users", () =>
      Effect.gen(function* () {
        const { get } = yield* trial
        const comments = yield* get("/v1/forum/search?query=python&type=comments&sort=new")
        assertCharged(comments, "forumSearch", 6)
        assert.isTrue(comments.body.data.results.every((r: any) => r.kind === "comment"))
        const communities = yield* get("/v1/forum/search?query=python&type=communities")
        assert.include(
          communities.body.data.results.map((r: any) => r.name),
          "python"
        )
        const users = yield* get("/v1/forum/search?query=panda&type=users")
        assert.isAbove(users.body.data.results.length, 0)
        assert.isTrue(users.body.data.results.every((r: any) => r.kind === "user"))
      })
    )

    it.effect("forumSearch: each validation rule names its parameter and charges nothing", () =>
      Effect.gen(function* () {
        const { get, usedToday } = yield* trial
        assertInvalid(yield* get("/v1/forum/search?query=python&type=communities&sort=top"), "sort")
        assertInvalid(yield* get("/v1/forum/search?query=panda&type=users&sort=relevance"), "sort")
        assertInvalid(yield* get("/v1/forum/search?query=python&type=comments&sort=hot"), "sort")
        assertInvalid(yield* get("/v1/forum/search?query=python&type=comments&sort=comment_count"), "sort")
        assertInvalid(yield* get("/v1/forum/search?query=python&type=comments&range=today"), "range")
        assertInvalid(yield* get("/v1/forum/search?query=python&type=users&range=today"), "range")
        assertInvalid(yield* get("/v1/forum/search?query=python&type=threads"), "type")
        assertInvalid(yield* get("/v1/forum/search?query=python&range=forever"), "range")
        assertInvalid(yield* get(`/v1/forum/search?query=${"a".repeat(257)}`), "query")
        assertInvalid(yield* get("/v1/forum/search?query=%20%20"), "query")
        assertInvalid(yield* get("/v1/forum/search"), "query")
        for (const url of [
          posts[0]!.permalink,
          "www.forum.com/c/python",
          "forum.com",
          "see https://example.com/x"
        ]) {
          assertInvalid(yield* get(`/v1/forum/search?query=${q(url)}`), "query", /resolveForumUrl/)
        }
        assert.strictEqual(yield* usedToday, 0)
        assert.strictEqual((yield* get(`/v1/forum/search?query=${"python ".repeat(36).trim()}`)).status, 200)
      })
    )

    it.effect(
      "forumSearch: cursor pages are paid-only, priced like the first, and bound to their query",
      () =>
        Effect.gen(function* () {
          const { get } = yield* trial
          const first = yield* get("/v1/forum/search?query=python")
          const cursor = first.body.data.cursor as string
          const capped = yield* get(`/v1/forum/search?query=python&cursor=${q(cursor)}`)
          assert.strictEqual(capped.status, 403)
          assert.strictEqual(capped.body.code, "TRIAL_CAP_EXCEEDED")
          assert.strictEqual(capped.body.param, "cursor")
          const call = yield* paid
          const second = yield* call(`/v1/forum/search?query=python&cursor=${q(cursor)}`)
          assertCharged(second, "forumSearch", 6)
          assert.deepStrictEqual(second.body.data, {
            results: page(world.forumSearch({ query: "python" }, cursor)).items,
            cursor: page(world.forumSearch({ query: "python" }, cursor)).next_cursor
          })
          assert.notDeepEqual(second.body.data.results, first.body.data.results)
          assertInvalid(yield* call(`/v1/forum/search?query=python&sort=new&cursor=${q(cursor)}`), "cursor")
          assertInvalid(yield* call("/v1/forum/search?query=python&cursor=forged"), "cursor")
        })
    )

    it.effect("getCommunity: details for 4, settings for 2 more, URLs cleaned, no posts", () =>
      Effect.gen(function* () {
        const { get } = yield* trial
        const plain = yield* get("/v1/forum/communities?community_name=python")
        assertCharged(plain, "getCommunity", 4)
        assert.strictEqual(plain.body.kind, "community")
        assert.deepStrictEqual(plain.body.data, world.getCommunity("python", false))
        assert.notProperty(plain.body.data, "rules")
        assert.notProperty(plain.body.data, "posts")
        const withSettings = yield* get("/v1/forum/communities?community_name=python&include_settings=true")
        assertCharged(withSettings, "getCommunity", 6)
        assert.deepStrictEqual(withSettings.body.data, world.getCommunity("python", true))
        assert.isArray(withSettings.body.data.rules)
        assert.isArray(withSettings.body.data.moderators)
        const off = yield* get("/v1/forum/communities?community_name=python&include_settings=false")
        assertCharged(off, "getCommunity", 4)
        for (const name of [
          "https://www.forum.com/c/Python/?utm_source=share&utm_medium=web",
          "m.forum.com/r/python/"
        ]) {
          const cleaned = yield* get(`/v1/forum/communities?community_name=${q(name)}`)
          assert.deepStrictEqual(cleaned.body.data, plain.body.data)
        }
      })
    )

    it.effect(
      "getCommunity: bad names, bad booleans and other URLs are INVALID_INPUT; unknown is NOT_FOUND",
      () =>
        Effect.gen(function* () {
          const { get, usedToday } = yield* trial
          assertInvalid(yield* get("/v1/forum/communities?community_name=two%20words"), "community_name")
          assertInvalid(
            yield* get(`/v1/forum/communities?community_name=${q(posts[0]!.permalink)}`),
            "community_name"
          )
          assertInvalid(
            yield* get("/v1/forum/communities?community_name=https%3A%2F%2Fexample.com%2Fc%2Fx"),
            "community_name"
          )
          assertInvalid(
            yield* get("/v1/forum/communities?community_name=python&include_settings=yes"),
            "include_settings"
          )
          assertInvalid(yield* get("/v1/forum/communities"), "community_name")
          const missing = yield* get("/v1/forum/communities?community_name=nosuchcommunityhere")
          assert.strictEqual(missing.status, 404)
          assert.strictEqual(missing.body.code, "NOT_FOUND")
          assert.strictEqual(yield* usedToday, 0)
        })
    )

    it.effect(
      "getCommunityPosts: hot by default for 4 a page, top with a range, cursor pages paid-only",
      () =>
        Effect.gen(function* () {
          const { get, usedToday } = yield* trial
          const hot = yield* get(
            "/v1/forum/communities/posts?community_name=https%3A%2F%2Fforum.com%2Fc%2Fpython%2F"
          )
          assertCharged(hot, "getCommunityPosts", 4)
          assert.strictEqual(hot.body.kind, "community_posts")
          const expected = page(world.getCommunityPosts("python", "hot", "all_time", undefined))
          assert.deepStrictEqual(hot.body.data, { posts: expected.items, cursor: expected.next_cursor })
          const top = yield* get("/v1/forum/communities/posts?community_name=python&sort=top&range=past_year")
          assert.deepStrictEqual(
            top.body.data.posts,
            page(world.getCommunityPosts("python", "top", "past_year", undefined)).items
          )
          const spent = yield* usedToday
          assertInvalid(yield* get("/v1/forum/communities/posts?community_name=python&range=today"), "range")
          assertInvalid(
            yield* get("/v1/forum/communities/posts?community_name=python&sort=new&range=today"),
            "range"
          )
          assertInvalid(yield* get("/v1/forum/communities/posts?community_name=python&sort=best"), "sort")
          const missing = yield* get("/v1/forum/communities/posts?community_name=nosuchcommunityhere")
          assert.strictEqual(missing.body.code, "NOT_FOUND")
          const capped = yield* get(
            `/v1/forum/communities/posts?community_name=python&cursor=${q(expected.next_cursor!)}`
          )
          assert.strictEqual(capped.body.code, "TRIAL_CAP_EXCEEDED")
          assert.strictEqual(capped.body.param, "cursor")
          assert.strictEqual(yield* usedToday, spent)
          const call = yield* paid
          const second = yield* call(
            `/v1/forum/communities/posts?community_name=python&cursor=${q(expected.next_cursor!)}`
          )
          assertCharged(second, "getCommunityPosts", 4)
          assert.deepStrictEqual(
            second.body.data.posts,
            page(world.getCommunityPosts("python", "hot", "all_time", expected.next_cursor!)).items
          )
          assertInvalid(
            yield* call(
              `/v1/forum/communities/posts?community_name=python&sort=new&cursor=${q(expected.next_cursor!)}`
            ),
            "cursor"
          )
        })
    )

    it.effect("getForumUser: 4 credits plus 2 per section; name or profile URL; unknown is NOT_FOUND", () =>
      Effect.gen(function* () {
        const { get, usedToday } = yield* trial
        const bare = yield* get(`/v1/forum/users?username=${author.username}`)
        assertCharged(bare, "getForumUser", 4)
        assert.strictEqual(bare.body.kind, "forum_user")
        assert.deepStrictEqual(bare.body.data, author)
        assert.notProperty(bare.body.data, "posts")
        const url = q(`https://www.forum.com/user/${author.username.toUpperCase()}/?utm_source=x`)
        const both = yield* get(`/v1/forum/users?username=${url}&sections=posts,comments`)
        assertCharged(both, "getForumUser", 8)
        assert.deepStrictEqual(both.body.data, world.getForumUser(author.username, ["comments", "posts"]))
        const reordered = yield* get(`/v1/forum/users?username=u/${author.username}&sections=comments,posts`)
        assertCharged(reordered, "getForumUser", 8)
        assert.deepStrictEqual(reordered.body.data, both.body.data)
        const spent = yield* usedToday
        assertInvalid(
          yield* get(`/v1/forum/users?username=${author.username}&sections=posts,posts`),
          "sections",
          /"posts" is listed more than once in sections\. Send each of posts, comments at most once/
        )
        assertInvalid(
          yield* get(`/v1/forum/users?username=${author.username}&sections=posts,comments,posts`),
          "sections",
          /At most 2 sections \(got 3\)/
        )
        assertInvalid(yield* get(`/v1/forum/users?username=${author.username}&sections=karma`), "sections")
        assertInvalid(yield* get("/v1/forum/users?username=a%20b"), "username")
        assertInvalid(yield* get("/v1/forum/users?username=https%3A%2F%2Fforum.com%2Fc%2Fpython"), "username")
        const missing = yield* get("/v1/forum/users?username=NoSuchUser0000")
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(yield* usedToday, spent)
      })
    )

    it.effect(
      "getForumPosts: ids and permalinks in order, deduplicated, missing listed, priced by count",
      () =>
        Effect.gen(function* () {
          const { get } = yield* trial
          const [a, b, c] = posts
          const tracked = q(`${b!.permalink.replace("https://", "https://www.")}?utm_source=share`)
          const reply = yield* get(
            `/v1/forum/posts?ids=${a!.id.toUpperCase()},${tracked},${c!.id},${a!.permalink},zzzzzzzz`
          )
          assertCharged(reply, "getForumPosts", 4)
          assert.strictEqual(reply.body.kind, "forum_posts")
          assert.deepStrictEqual(reply.body.data, {
            posts: world.getForumPosts([a!.id, b!.id, c!.id]),
            missing: ["zzzzzzzz"]
          })
          // The same call again is served from the cache, which must keep the missing id missing.
          const cached = yield* get(
            `/v1/forum/posts?ids=${a!.id.toUpperCase()},${tracked},${c!.id},${a!.permalink},zzzzzzzz`
          )
          assert.deepStrictEqual(cached.body.data, reply.body.data)
          const eleven = [...posts, ...morePosts].slice(0, 11).map((p) => p.id)
          const more = yield* get(`/v1/forum/posts?ids=${eleven.join(",")}`)
          assertCharged(more, "getForumPosts", 5)
          assert.strictEqual(more.body.data.posts.length, 11)
          const viaComment = yield* get(`/v1/forum/posts?ids=${q(comment.permalink)}`)
          assert.strictEqual(viaComment.body.data.posts[0].id, comment.post_id)
        })
    )

    it.effect(
      "getForumPosts: thread=true reads one discussion for 8; its options count only with thread",
      () =>
        Effect.gen(function* () {
          const { get } = yield* trial
          const id = posts[0]!.id
          const thread = yield* get(`/v1/forum/posts?ids=${id}&thread=true`)
          assertCharged(thread, "getForumPosts", 8)
          // Through JSON, as the service answers (the world may compute -0).
          const expected = JSON.parse(JSON.stringify(world.getThread(id, 100, "top")))
          assert.deepStrictEqual(thread.body.data, { posts: [expected.post], missing: [], thread: expected })
          const newest = yield* get(`/v1/forum/posts?ids=${id}&thread=true&comment_limit=5&comment_sort=new`)
          assert.deepStrictEqual(
            newest.body.data.thread,
            JSON.parse(JSON.stringify(world.getThread(id, 5, "new")))
          )
          assert.strictEqual(newest.body.data.thread.comments.length, 5)
          const call = yield* paid
          const key = uuid()
          const plain = yield* call(`/v1/forum/posts?ids=${id}`, key)
          assertCharged(plain, "getForumPosts", 4)
          assert.notProperty(plain.body.data, "thread")
          // Without thread the comment options are not part of the call: same fingerprint, a replay.
          const replay = yield* call(
            `/v1/forum/posts?ids=${id}&thread=false&comment_limit=7&comment_sort=old`,
            key
          )
          assert.strictEqual(replay.status, 200)
          assert.isTrue(replay.body.receipt.replayed)
          const reused = yield* call(`/v1/forum/posts?ids=${id}&thread=true`, key)
          assert.strictEqual(reused.body.code, "IDEMPOTENCY_KEY_REUSED")
        })
    )

    it.effect("getForumPosts: each validation rule names its parameter; no post at all is NOT_FOUND", () =>
      Effect.gen(function* () {
        const { get, usedToday } = yield* trial
        const [a, b] = posts
        assertInvalid(
          yield* get(`/v1/forum/posts?ids=${a!.id},${b!.id}&thread=true`),
          "thread",
          /exactly one/
        )
        assertInvalid(yield* get(`/v1/forum/posts?ids=${a!.id},not%20an%20id`), "ids", /"not an id"/)
        assertInvalid(
          yield* get(`/v1/forum/posts?ids=${q("https://forum.com/c/python/")}`),
          "ids",
          /forum\.com\/c\/python/
        )
        assertInvalid(yield* get("/v1/forum/posts?ids=,,"), "ids")
        assertInvalid(yield* get("/v1/forum/posts"), "ids")
        const many = Array.from({ length: 101 }, (_, i) => `a${i.toString(36)}`).join(",")
        assertInvalid(yield* get(`/v1/forum/posts?ids=${many}`), "ids", /1 to 100/)
        assertInvalid(yield* get(`/v1/forum/posts?ids=${a!.id}&thread=true&comment_limit=0`), "comment_limit")
        assertInvalid(
          yield* get(`/v1/forum/posts?ids=${a!.id}&thread=true&comment_limit=501`),
          "comment_limit"
        )
        assertInvalid(
          yield* get(`/v1/forum/posts?ids=${a!.id}&thread=true&comment_sort=best`),
          "comment_sort"
        )
        const none = yield* get("/v1/forum/posts?ids=zzzzzzzz,zzzzzzzy")
        assert.strictEqual(none.status, 404)
        assert.strictEqual(none.body.code, "NOT_FOUND")
        const noThread = yield* get("/v1/forum/posts?ids=zzzzzzzz&thread=true")
        assert.strictEqual(noThread.status, 404)
        assert.strictEqual(yield* usedToday, 0)
      })
    )

    it.effect("resolveForumUrl: posts, comments, communities and users for 2; other URLs refused", () =>
      Effect.gen(function* () {
        const { get, usedToday } = yield* trial
        const resolve = (url: string) => get(`/v1/forum/resolve-url?url=${q(url)}`)
        const post = yield* resolve(
          `http://m.forum.com${new URL(posts[0]!.permalink).pathname}?utm_source=x#top`
        )
        assertCharged(post, "resolveForumUrl", 2)
        assert.strictEqual(post.body.kind, "forum_url_resolution")
        assert.deepStrictEqual(post.body.data, world.resolveForumUrl(posts[0]!.permalink))
        assert.strictEqual(post.body.data.id, posts[0]!.id)
        const reply = yield* resolve(`${comment.permalink}?context=3`)
        assert.deepStrictEqual(reply.body.data, world.resolveForumUrl(comment.permalink))
        assert.strictEqual(reply.body.data.type, "comment")
        assert.strictEqual(reply.body.data.post_id, comment.post_id)
        const community = yield* resolve("www.forum.com/r/Python/top/?t=week")
        assert.strictEqual(community.body.data.type, "community")
        assert.strictEqual(community.body.data.community, "python")
        const user = yield* resolve(`https://forum.com/u/${author.username}`)
        assert.deepStrictEqual(user.body.data, world.resolveForumUrl(author.profile_url))
        const spent = yield* usedToday
        assertInvalid(yield* resolve("https://profnet.com/in/someone"), "url", /Not a forum\.com URL/)
        assertInvalid(yield* resolve("https://forum.com/settings/profile"), "url")
        const missing = yield* resolve("https://forum.com/comments/zzzzzzzz/")
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(yield* usedToday, spent)
      })
    )

    it.effect("the OpenAPI document lists every forum operation with its parameters", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const spec = (yield* app.call("/v1/openapi.json")).body
        const byId = operationsById(spec)
        for (const operation of operations) assert.isTrue(byId.has(operation.id), operation.id)
        const expected: Record<string, [string, ReadonlyArray<string>]> = {
          forumSearch: [
            "/v1/forum/search",
            ["query", "type", "sort", "range", "cursor", "freshness", "max_credits"]
          ],
          getCommunity: ["/v1/forum/communities", ["community_name", "include_settings", "freshness"]],
          getCommunityPosts: ["/v1/forum/communities/posts", ["community_name", "sort", "range", "cursor"]],
          getForumUser: ["/v1/forum/users", ["username", "sections"]],
          getForumPosts: ["/v1/forum/posts", ["ids", "thread", "comment_limit", "comment_sort"]],
          resolveForumUrl: ["/v1/forum/resolve-url", ["url"]]
        }
        for (const [id, [path, params]] of Object.entries(expected)) {
          const op = byId.get(id)
          assert.strictEqual(op.path, path)
          const names = op.parameters.map((p: any) => p.name)
          for (const name of params) assert.include(names, name, `${id} ${name}`)
        }
        for (const operation of operations.filter((o) => o.platform === "forum")) {
          for (const [name, field] of Object.entries(operation.params.fields)) {
            assert.isString(
              SchemaAST.resolveDescription((field as Schema.Top).ast),
              `${operation.id} ${name}`
            )
          }
        }
        const resolveParams = byId.get("resolveForumUrl").parameters.map((p: any) => p.name)
        // A resolve takes its url and the header only (the contract's resolveUrl rule).
        assert.notInclude(resolveParams, "freshness")
        assert.notInclude(resolveParams, "max_credits")
      })
    )
  })
})
