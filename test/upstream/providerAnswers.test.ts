import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { operations } from "../../src/operations/registry.ts"
import { layerHttp } from "../../src/upstream/HttpProvider.ts"
import { type UpstreamFailure, UpstreamFaults } from "../../src/upstream/Upstream.ts"
import { makeCtx } from "../../src/upstream/world/context.ts"
import { accountCore, tweet } from "../../src/upstream/world/microblog.ts"
import { paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { serve, withProvider } from "./provider.ts"

const ctx = makeCtx("provider-answers")
const sample = tweet(ctx, accountCore(ctx, 0), 0)
const { likes: _, ...withoutLikes } = sample

/** A provider that answers every call with `{"result": result}`. */
const answering = (result: unknown) =>
  serve(HttpRouter.add("POST", "/v1/call/:method", HttpServerResponse.jsonUnsafe({ result })))

const failure = <A>(effect: Effect.Effect<A, UpstreamFailure>) => Effect.flip(effect)

describe("HttpProvider decodes every answer with its method's schema", () => {
  const malformed: ReadonlyArray<readonly [string, unknown]> = [
    ["another shape", { nope: 1 }],
    ["a missing field", withoutLikes],
    ["a field of the wrong type", { ...sample, likes: "12" }],
    ["a nested field of the wrong type", { ...sample, author: { ...sample.author, id: 7 } }],
    ["a string", "a tweet"],
    ["a list", [sample]],
    ["a foreign cursor's answer, from a lookup", "invalid_cursor"]
  ]
  for (const [what, result] of malformed) {
    it.live(`an answer with ${what} is bad_response, without retrying`, () =>
      Effect.gen(function* () {
        const { url, stats } = yield* answering(result)
        const error = yield* withProvider(url, { retries: 2 }, (upstream) =>
          failure(upstream.call("getTweet", sample.id))
        )
        assert.deepInclude(error, { reason: "bad_response", platform: "microblog" })
        assert.strictEqual(stats.calls, 1)
      })
    )
  }

  it.live("a page with a malformed item, or a list with a malformed entry, is bad_response", () =>
    Effect.gen(function* () {
      const page = yield* answering({ items: [sample, { id: 1 }], next_cursor: null })
      const search = yield* withProvider(page.url, {}, (upstream) =>
        failure(upstream.call("microblogSearch", { query: "rust" }, undefined))
      )
      assert.strictEqual(search.reason, "bad_response")
      const list = yield* answering([null, 7])
      const posts = yield* withProvider(list.url, {}, (upstream) =>
        failure(upstream.call("getForumPosts", ["a", "b"]))
      )
      assert.deepInclude(posts, { reason: "bad_response", platform: "forum" })
    })
  )

  it.live("a provider answering garbage opens its circuit like a failing one", () =>
    Effect.gen(function* () {
      const { url, stats } = yield* answering({ nope: 1 })
      yield* withProvider(url, { breakerFailures: 5 }, (upstream) =>
        Effect.gen(function* () {
          for (let n = 0; n < 5; n++) {
            assert.strictEqual((yield* failure(upstream.call("getTweet", sample.id))).reason, "bad_response")
          }
          assert.strictEqual((yield* failure(upstream.call("getTweet", sample.id))).reason, "circuit_open")
          assert.strictEqual(stats.calls, 5)
        })
      )
    })
  )

  it.live(
    "a well-formed answer is the declared record: null is undefined, fields not declared are dropped",
    () =>
      Effect.gen(function* () {
        const extra = yield* answering({ ...sample, secret: "not ours to pass on" })
        const answer = yield* withProvider(extra.url, {}, (upstream) => upstream.call("getTweet", sample.id))
        assert.deepStrictEqual(answer, sample)
        const none = yield* answering(null)
        assert.isUndefined(yield* withProvider(none.url, {}, (upstream) => upstream.call("getTweet", "1")))
        const posts = yield* answering([null])
        assert.deepStrictEqual(
          yield* withProvider(posts.url, {}, (upstream) => upstream.call("getForumPosts", ["a"])),
          [undefined]
        )
      })
  )
})

/** The service over a provider that answers every call with a record of another shape. */
const garbageUpstream = Layer.unwrap(
  answering({ ...sample, likes: "many" }).pipe(
    Effect.map(({ url }) => layerHttp({ baseUrl: url, retries: 0 })),
    Effect.orDie
  )
).pipe(Layer.merge(UpstreamFaults.layer))

describe(`a malformed provider answer through the service (${storeName})`, () => {
  layer(testApp(operations, {}, garbageUpstream), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("is UPSTREAM_UNAVAILABLE and charges nothing", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const minted = yield* paidKey("10.77.0.1", 100)
        const auth = { key: minted.key, ip: minted.ip }
        for (const freshness of ["recent", "realtime"]) {
          const reply = yield* app.call(`/v1/microblog/tweet?id=${sample.id}&freshness=${freshness}`, {
            ...auth,
            idempotencyKey: crypto.randomUUID()
          })
          assert.strictEqual(reply.status, 502, JSON.stringify(reply.body))
          assert.strictEqual(reply.body.code, "UPSTREAM_UNAVAILABLE")
          assert.isAbove(reply.body.retry_after_seconds, 0)
        }
        const usage = yield* app.call("/v1/usage", auth)
        assert.strictEqual(usage.body.balance.purchased, 100)
      })
    )
  })
})
