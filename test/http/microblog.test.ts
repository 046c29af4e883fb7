import { assert, describe, layer } from "@effect/vitest"
import { Effect, type Schema, SchemaAST } from "effect"
import type { Tweet } from "../../src/contract/records.ts"
import { operations } from "../../src/operations/registry.ts"
import type { Page } from "../../src/upstream/contract.ts"
import { makeWorld } from "../../src/upstream/world/index.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { type CallOptions, TestApp, testApp, testSeed } from "../support/app.ts"
import { assertInvalid, operationsById } from "../support/assertions.ts"
import { storeName } from "../support/database.ts"

const world = makeWorld(testSeed)
const freshIp = ipSequence("10.42")
const uuid = () => crypto.randomUUID()
const q = encodeURIComponent

const page = <A>(p: Page<A> | "invalid_cursor" | undefined): Page<A> => {
  if (p === undefined || p === "invalid_cursor") throw new Error(`expected a page, got ${String(p)}`)
  return p
}
const search = page(world.microblogSearch({ query: "python" }, undefined))
/** An account with more than one page of tweets and replies on its first page. */
const account = (() => {
  for (const hit of search.items) {
    const plain = page(world.getTweets(hit.author.handle, false, undefined))
    const replies = page(world.getTweets(hit.author.handle, true, undefined))
    if (plain.next_cursor !== null && replies.items.some((t) => t.is_reply))
      return world.getMicroblogProfile({ handle: hit.author.handle })!
  }
  throw new Error("no account with replies and two pages")
})()
const tweet: Tweet = page(world.getTweets(account.handle, false, undefined)).items[0]!
/** A popular tweet with more than one page of replies, and one without any. */
const popular = ["coffee", "cooking", "chess", "python", "rust", "gaming"].flatMap(
  (query) => page(world.microblogSearch({ query, sort: "top" }, undefined)).items
)
const conversation = popular.find((t) => t.replies > 20)!
const quiet = popular.find((t) => t.replies === 0)!

const trial = Effect.gen(function* () {
  const app = yield* TestApp
  const ip = freshIp()
  const { key } = yield* app.mint(ip)
  const get = (path: string, options: CallOptions = {}) => app.call(path, { key, ip, ...options })
  const usedToday = Effect.map(get("/v1/usage"), (reply) => reply.body.free_tier.used_today as number)
  return { get, usedToday }
})

const paid = Effect.gen(function* () {
  const app = yield* TestApp
  const minted = yield* paidKey(freshIp(), 1000)
  const ip = minted.ip
  return (path: string) => app.call(path, { key: minted.key, ip, idempotencyKey: uuid() })
})

const assertCharged = (
  reply: { status: number; body: any },
  operation: string,
  kind: string,
  credits: number
) => {
  assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
  assert.strictEqual(reply.body.kind, kind)
  assert.deepStrictEqual(reply.body.cost, { quoted: credits, charged: credits, refunded: 0 })
  assert.strictEqual(reply.body.receipt.operation, operation)
  assert.strictEqual(reply.body.receipt.charged, credits)
}

const assertNotFound = (reply: { status: number; body: any }) => {
  assert.strictEqual(reply.status, 404, JSON.stringify(reply.body))
  assert.strictEqual(reply.body.code, "NOT_FOUND")
}

describe(`microblog operations (${storeName})`, () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("microblogSearch: a page of tweets for 6 credits, latest by default or top", () =>
      Effect.gen(function* () {
        const { get, usedToday } = yield* trial
        const latest = yield* get("/v1/microblog/search?query=%20python%20")
        assertCharged(latest, "microblogSearch", "microblog_search", 6)
        assert.deepStrictEqual(latest.body.data, { results: search.items, cursor: search.next_cursor })
        const explicit = yield* get("/v1/microblog/search?query=python&sort=latest")
        assert.deepStrictEqual(explicit.body.data, latest.body.data)
        const top = yield* get("/v1/microblog/search?query=python&sort=top")
        assert.deepStrictEqual(
          top.body.data.results,
          page(world.microblogSearch({ query: "python", sort: "top" }, undefined)).items
        )
        const spent = yield* usedToday
        assertInvalid(yield* get("/v1/microblog/search?query=python&sort=oldest"), "sort")
        assertInvalid(yield* get(`/v1/microblog/search?query=${"a".repeat(513)}`), "query")
        assertInvalid(yield* get("/v1/microblog/search?query=%20"), "query")
        assertInvalid(yield* get("/v1/microblog/search"), "query")
        assert.strictEqual(yield* usedToday, spent)
        assert.strictEqual(
          (yield* get(`/v1/microblog/search?query=${"python ".repeat(73).trim()}`)).status,
          200
        )
      })
    )

    it.effect("microblogSearch: cursor pages are paid-only and bound to their query", () =>
      Effect.gen(function* () {
        const { get } = yield* trial
        const cursor = search.next_cursor!
        const capped = yield* get(`/v1/microblog/search?query=python&cursor=${q(cursor)}`)
        assert.strictEqual(capped.status, 403)
        assert.strictEqual(capped.body.code, "TRIAL_CAP_EXCEEDED")
        assert.strictEqual(capped.body.param, "cursor")
        const call = yield* paid
        const second = yield* call(`/v1/microblog/search?query=python&cursor=${q(cursor)}`)
        assertCharged(second, "microblogSearch", "microblog_search", 6)
        const expected = page(world.microblogSearch({ query: "python" }, cursor))
        assert.deepStrictEqual(second.body.data, { results: expected.items, cursor: expected.next_cursor })
        assertInvalid(yield* call(`/v1/microblog/search?query=python&sort=top&cursor=${q(cursor)}`), "cursor")
        assertInvalid(yield* call("/v1/microblog/search?query=python&cursor=forged"), "cursor")
      })
    )

    it.effect("getMicroblogProfile: handle, @handle, profile URL or numeric id, for 4 credits", () =>
      Effect.gen(function* () {
        const { get, usedToday } = yield* trial
        for (const identifier of [
          account.handle,
          `@${account.handle.toUpperCase()}`,
          `https://www.microblog.com/${account.handle}?ref_src=twsrc%5Egoogle`,
          `m.microblog.com/${account.handle}/`,
          account.id
        ]) {
          const reply = yield* get(`/v1/microblog/profiles?identifier=${q(identifier)}`)
          assertCharged(reply, "getMicroblogProfile", "microblog_profile", 4)
          assert.deepStrictEqual(reply.body.data, account)
        }
        const spent = yield* usedToday
        assertInvalid(
          yield* get(`/v1/microblog/profiles?identifier=${q(tweet.url)}`),
          "identifier",
          /getTweet/
        )
        assertInvalid(yield* get("/v1/microblog/profiles?identifier=not%20a%20handle"), "identifier")
        assertInvalid(
          yield* get("/v1/microblog/profiles?identifier=https%3A%2F%2Fforum.com%2Fu%2Fx"),
          "identifier"
        )
        assertInvalid(yield* get("/v1/microblog/profiles"), "identifier")
        assertNotFound(yield* get("/v1/microblog/profiles?identifier=nobody00000"))
        assertNotFound(yield* get("/v1/microblog/profiles?identifier=42"))
        assert.strictEqual(yield* usedToday, spent)
      })
    )

    it.effect(
      "getTweets: a page of 4 credits without replies by default, include_replies=true adds them",
      () =>
        Effect.gen(function* () {
          const { get, usedToday } = yield* trial
          const plain = yield* get(
            `/v1/microblog/tweets?identifier=${q(`https://microblog.com/${account.handle}`)}`
          )
          assertCharged(plain, "getTweets", "tweets", 4)
          const expected = page(world.getTweets(account.handle, false, undefined))
          assert.deepStrictEqual(plain.body.data, { tweets: expected.items, cursor: expected.next_cursor })
          assert.isTrue(plain.body.data.tweets.every((t: Tweet) => !t.is_reply))
          const byId = yield* get(`/v1/microblog/tweets?identifier=${account.id}&include_replies=false`)
          assert.deepStrictEqual(byId.body.data, plain.body.data)
          const replies = yield* get(`/v1/microblog/tweets?identifier=${account.handle}&include_replies=true`)
          assertCharged(replies, "getTweets", "tweets", 4)
          assert.isTrue(replies.body.data.tweets.some((t: Tweet) => t.is_reply))
          const spent = yield* usedToday
          assertInvalid(
            yield* get(`/v1/microblog/tweets?identifier=${account.handle}&include_replies=1`),
            "include_replies"
          )
          assertInvalid(yield* get("/v1/microblog/tweets?identifier=a%20b"), "identifier")
          assertNotFound(yield* get("/v1/microblog/tweets?identifier=nobody00000"))
          const capped = yield* get(
            `/v1/microblog/tweets?identifier=${account.handle}&cursor=${q(expected.next_cursor!)}`
          )
          assert.strictEqual(capped.body.code, "TRIAL_CAP_EXCEEDED")
          assert.strictEqual(capped.body.param, "cursor")
          assert.strictEqual(yield* usedToday, spent)
        })
    )

    it.effect("getTweets: older pages with the cursor on a paid key; the cursor is bound to its query", () =>
      Effect.gen(function* () {
        const call = yield* paid
        const cursor = page(world.getTweets(account.handle, false, undefined)).next_cursor!
        const older = yield* call(`/v1/microblog/tweets?identifier=${account.handle}&cursor=${q(cursor)}`)
        assertCharged(older, "getTweets", "tweets", 4)
        const expected = page(world.getTweets(account.handle, false, cursor))
        assert.deepStrictEqual(older.body.data, { tweets: expected.items, cursor: expected.next_cursor })
        const url = `/v1/microblog/tweets?identifier=${account.handle}&include_replies=true&cursor=${q(cursor)}`
        assertInvalid(yield* call(url), "cursor")
      })
    )

    it.effect("getTweet: numeric id or status URL (tracking, www/m, /i/web/status) for 4 credits", () =>
      Effect.gen(function* () {
        const { get, usedToday } = yield* trial
        const path = new URL(tweet.url).pathname
        for (const id of [
          tweet.id,
          `https://www.microblog.com${path}?s=20&t=abcdef`,
          `m.microblog.com${path}/photo/1`,
          `https://microblog.com/i/web/status/${tweet.id}`
        ]) {
          const reply = yield* get(`/v1/microblog/tweet?id=${q(id)}`)
          assertCharged(reply, "getTweet", "tweet", 4)
          assert.deepStrictEqual(reply.body.data, tweet)
        }
        const spent = yield* usedToday
        assertInvalid(yield* get(`/v1/microblog/tweet?id=${q(account.url)}`), "id", /getTweets/)
        assertInvalid(yield* get("/v1/microblog/tweet?id=abc"), "id")
        assertInvalid(yield* get("/v1/microblog/tweet"), "id")
        assertNotFound(yield* get("/v1/microblog/tweet?id=1234567890123456789"))
        assert.strictEqual(yield* usedToday, spent)
      })
    )

    it.effect(
      "getTweetReplies: a page of replies for 4 credits, top by default or latest; id or status URL",
      () =>
        Effect.gen(function* () {
          const { get, usedToday } = yield* trial
          const replies = (query: string) => get(`/v1/microblog/tweet/replies?${query}`)
          const top = yield* replies(`id=${conversation.id}`)
          assertCharged(top, "getTweetReplies", "tweet_replies", 4)
          const expected = page(world.getTweetReplies(conversation.id, "top", undefined))
          assert.deepStrictEqual(top.body.data, { replies: expected.items, cursor: expected.next_cursor })
          assert.strictEqual(top.body.data.replies.length, 20)
          assert.isString(top.body.data.cursor)
          const likes = top.body.data.replies.map((t: Tweet) => t.likes)
          assert.deepStrictEqual(
            likes,
            [...likes].sort((a: number, b: number) => b - a)
          )
          for (const reply of top.body.data.replies as ReadonlyArray<Tweet>) {
            assert.isTrue(reply.is_reply)
            assert.isTrue(reply.text.startsWith(`@${conversation.author.handle} `))
          }
          assert.deepStrictEqual((yield* replies(`id=${conversation.id}&sort=top`)).body.data, top.body.data)
          const path = new URL(conversation.url).pathname
          const latest = yield* replies(`id=${q(`https://m.microblog.com${path}?s=20`)}&sort=latest`)
          assertCharged(latest, "getTweetReplies", "tweet_replies", 4)
          const newest = page(world.getTweetReplies(conversation.id, "latest", undefined))
          assert.deepStrictEqual(latest.body.data, { replies: newest.items, cursor: newest.next_cursor })
          const times = latest.body.data.replies.map((t: Tweet) => t.created_at)
          assert.deepStrictEqual(times, [...times].sort().reverse())
          // A reply is a tweet of its own: getTweet reads the same record.
          const reply = top.body.data.replies[0] as Tweet
          assert.deepStrictEqual((yield* get(`/v1/microblog/tweet?id=${reply.id}`)).body.data, reply)
          const none = yield* replies(`id=${quiet.id}`)
          assertCharged(none, "getTweetReplies", "tweet_replies", 4)
          assert.deepStrictEqual(none.body.data, { replies: [], cursor: null })
          const spent = yield* usedToday
          assertInvalid(yield* replies(`id=${conversation.id}&sort=oldest`), "sort")
          assertInvalid(yield* replies("id=abc"), "id")
          assertInvalid(yield* replies(`id=${q(account.url)}`), "id", /getTweets/)
          assertInvalid(yield* replies(`id=${q(`https://forum.com${path}`)}`), "id")
          assertInvalid(yield* replies(""), "id")
          assertNotFound(yield* replies("id=1234567890123456789"))
          const capped = yield* replies(`id=${conversation.id}&cursor=${q(expected.next_cursor!)}`)
          assert.strictEqual(capped.status, 403)
          assert.strictEqual(capped.body.code, "TRIAL_CAP_EXCEEDED")
          assert.strictEqual(capped.body.param, "cursor")
          assert.strictEqual(yield* usedToday, spent)
        })
    )

    it.effect(
      "getTweetReplies: more replies with the cursor on a paid key; the cursor is bound to its query",
      () =>
        Effect.gen(function* () {
          const call = yield* paid
          const replies = (query: string) => call(`/v1/microblog/tweet/replies?${query}`)
          const cursor = page(world.getTweetReplies(conversation.id, "top", undefined)).next_cursor!
          const second = yield* replies(`id=${conversation.id}&cursor=${q(cursor)}`)
          assertCharged(second, "getTweetReplies", "tweet_replies", 4)
          const expected = page(world.getTweetReplies(conversation.id, "top", cursor))
          assert.deepStrictEqual(second.body.data, { replies: expected.items, cursor: expected.next_cursor })
          assert.isAbove(second.body.data.replies.length, 0)
          const first = page(world.getTweetReplies(conversation.id, "top", undefined)).items
          for (const reply of second.body.data.replies as ReadonlyArray<Tweet>)
            assert.isFalse(first.some((t) => t.id === reply.id))
          assertInvalid(yield* replies(`id=${conversation.id}&sort=latest&cursor=${q(cursor)}`), "cursor")
          assertInvalid(yield* replies(`id=${quiet.id}&cursor=${q(cursor)}`), "cursor")
          const timeline = page(world.getTweets(account.handle, false, undefined)).next_cursor!
          assertInvalid(yield* replies(`id=${conversation.id}&cursor=${q(timeline)}`), "cursor")
          assertInvalid(yield* replies(`id=${conversation.id}&cursor=forged`), "cursor")
        })
    )

    it.effect("resolveMicroblogUrl: profiles and tweets for 2 credits; other URLs refused", () =>
      Effect.gen(function* () {
        const { get, usedToday } = yield* trial
        const resolve = (url: string) => get(`/v1/microblog/resolve-url?url=${q(url)}`)
        const profile = yield* resolve(
          `https://m.microblog.com/${account.handle.toLowerCase()}/?utm_source=x`
        )
        assertCharged(profile, "resolveMicroblogUrl", "microblog_url_resolution", 2)
        assert.deepStrictEqual(profile.body.data, {
          type: "profile",
          id: account.id,
          handle: account.handle,
          canonical_url: account.url
        })
        const status = yield* resolve(`www.microblog.com${new URL(tweet.url).pathname}?s=20`)
        assert.deepStrictEqual(status.body.data, {
          type: "tweet",
          id: tweet.id,
          handle: account.handle,
          canonical_url: tweet.url
        })
        const spent = yield* usedToday
        assertInvalid(yield* resolve("https://forum.com/c/python"), "url", /Not a microblog\.com URL/)
        assertInvalid(yield* resolve("https://microblog.com/explore"), "url")
        assertInvalid(yield* get("/v1/microblog/resolve-url"), "url")
        assertNotFound(yield* resolve("https://microblog.com/nobody00000"))
        assert.strictEqual(yield* usedToday, spent)
      })
    )

    it.effect(
      "the OpenAPI document lists every operation, microblog paths and parameters in catalog order",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const spec = (yield* app.call("/v1/openapi.json")).body
          const byId = operationsById(spec)
          for (const operation of operations) assert.isTrue(byId.has(operation.id), operation.id)
          assert.deepStrictEqual(
            operations.map((operation) => operation.platform),
            [...Array(5).fill("profnet"), ...Array(6).fill("forum"), ...Array(6).fill("microblog")]
          )
          const expected: Record<string, [string, ReadonlyArray<string>]> = {
            microblogSearch: [
              "/v1/microblog/search",
              ["query", "sort", "cursor", "freshness", "max_credits"]
            ],
            getMicroblogProfile: ["/v1/microblog/profiles", ["identifier", "freshness"]],
            getTweets: ["/v1/microblog/tweets", ["identifier", "include_replies", "cursor"]],
            getTweet: ["/v1/microblog/tweet", ["id"]],
            resolveMicroblogUrl: ["/v1/microblog/resolve-url", ["url"]],
            getTweetReplies: [
              "/v1/microblog/tweet/replies",
              ["id", "sort", "cursor", "freshness", "max_credits"]
            ]
          }
          for (const [id, [path, params]] of Object.entries(expected)) {
            const op = byId.get(id)
            assert.strictEqual(op.path, path)
            const names = op.parameters.map((p: any) => p.name)
            for (const name of params) assert.include(names, name, `${id} ${name}`)
          }
          assert.notInclude(
            byId.get("resolveMicroblogUrl").parameters.map((p: any) => p.name),
            "freshness"
          )
          for (const operation of operations.filter((o) => o.platform === "microblog")) {
            for (const [name, field] of Object.entries(operation.params.fields)) {
              assert.isString(
                SchemaAST.resolveDescription((field as Schema.Top).ast),
                `${operation.id} ${name}`
              )
            }
          }
        })
    )
  })
})
