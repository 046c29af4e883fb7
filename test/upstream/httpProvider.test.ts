import { spawn } from "node:child_process"
import { type AddressInfo, createServer as createNetServer } from "node:net"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Cause, ConfigProvider, Effect, Exit, Layer, Option, Schedule } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { PeopleSearchResult, Tweet } from "../../src/contract/records.ts"
import type { Page } from "../../src/upstream/contract.ts"
import { layerFromConfig } from "../../src/upstream/HttpProvider.ts"
import { parseRetryAfter } from "../../src/upstream/http/attempt.ts"
import { upstreamRoutes } from "../../src/upstream/http/routes.ts"
import {
  type Answer,
  type Args,
  type Faults,
  type Method,
  Upstream,
  type UpstreamFailure,
  UpstreamFaults,
  worldMethods
} from "../../src/upstream/Upstream.ts"
import { InvalidCursor, makeWorld, warmUp } from "../../src/upstream/world/index.ts"
import { post, serve, withProvider } from "./provider.ts"

const seed = "http-provider-test"
const world = makeWorld(seed)
warmUp(world)

/** The simulated world over the provider contract, in process. */
const startUpstream = Effect.gen(function* () {
  const faults = yield* Effect.provide(
    Effect.gen(function* () {
      return yield* UpstreamFaults
    }),
    UpstreamFaults.layer
  )
  return yield* serve(upstreamRoutes(world, faults))
})

const setFaults = (url: string, patch: Partial<Faults>) => post(`${url}/faults`, patch)

const failure = <A>(effect: Effect.Effect<A, UpstreamFailure>) => Effect.flip(effect)

const worldAnswer = <M extends Method>(method: M, ...args: Args<M>): Answer<M> =>
  worldMethods(world)[method](...args)

const page = <A>(answer: Page<A> | InvalidCursor | undefined): Page<A> => {
  assert.isTrue(answer !== undefined && answer !== InvalidCursor, "expected a page")
  return answer as Page<A>
}

/** A sample of calls across the platforms, each compared with the world's own answer. */
const sameAsWorld = (upstream: Upstream["Service"]) =>
  Effect.gen(function* () {
    const same = <M extends Method>(method: M, ...args: Args<M>) =>
      Effect.map(upstream.call(method, ...args), (answer) => {
        assert.deepStrictEqual(answer, worldAnswer(method, ...args), method)
        return answer
      })
    const first = page<PeopleSearchResult>(
      yield* same("searchPeople", { keywords: "engineer" }, undefined, 10)
    )
    const second = page(yield* same("searchPeople", { keywords: "engineer" }, first.next_cursor!, 10))
    assert.notDeepEqual(second.items, first.items)
    const slug = first.items.find((person) => !person.is_anonymous)!.public_identifier!
    const person = (yield* same("getPerson", { slug }))!
    assert.strictEqual(person.public_identifier, slug)
    const company = worldAnswer("getCompany", { slug: person.current_position!.company_slug! })!
    assert.strictEqual((yield* same("getCompany", { domain: company.domain }))?.slug, company.slug)
    const forum = page(yield* same("forumSearch", { query: "python" }, undefined))
    const posts = yield* same("getForumPosts", [forum.items[0]!.id, "no-such-post"])
    assert.isUndefined(posts[1])
    const tweets = page<Tweet>(yield* same("microblogSearch", { query: "rust" }, undefined))
    yield* same("getTweet", tweets.items[0]!.id)
    yield* same("getTweetReplies", tweets.items[0]!.id, "latest", undefined)
    assert.strictEqual(yield* same("getTweetReplies", tweets.items[0]!.id, "top", "forged"), InvalidCursor)
    assert.isUndefined(yield* upstream.call("getPerson", { slug: "no-such-person-anywhere" }))
    assert.strictEqual(
      yield* upstream.call("searchPeople", { keywords: "designer" }, first.next_cursor!, 10),
      InvalidCursor
    )
  })

const freePort = Effect.promise(
  () =>
    new Promise<number>((resolve, reject) => {
      const probe = createNetServer()
      probe.once("error", reject)
      probe.listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as AddressInfo
        probe.close(() => resolve(port))
      })
    })
)

/** `npm run upstream` as a child process; killed when the test's scope closes. */
const startUpstreamProcess = Effect.gen(function* () {
  const port = yield* freePort
  const script = fileURLToPath(new URL("../../src/upstream/server.ts", import.meta.url))
  yield* Effect.acquireRelease(
    Effect.sync(() =>
      spawn(process.execPath, [script], {
        env: { ...process.env, UPSTREAM_PORT: String(port), WORLD_SEED: seed },
        stdio: "ignore"
      })
    ),
    (child) => Effect.sync(() => child.kill())
  )
  const url = `http://127.0.0.1:${port}`
  yield* Effect.tryPromise(() => fetch(`${url}/healthz`)).pipe(
    Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 300 })
  )
  return url
})

describe("HttpProvider over the upstream server", () => {
  it.live("answers as the world answers in process", () =>
    Effect.gen(function* () {
      const { url } = yield* startUpstream
      yield* withProvider(url, {}, sameAsWorld)
    })
  )

  it.live("answers the same from the server run as its own process", () =>
    Effect.gen(function* () {
      const url = yield* startUpstreamProcess
      yield* withProvider(url, {}, sameAsWorld)
    })
  )

  it.live("turns latency above the timeout into a timeout failure, after its retries", () =>
    Effect.gen(function* () {
      const { url, stats } = yield* startUpstream
      yield* setFaults(url, { latencyMs: { min: 400, max: 400 } })
      const error = yield* withProvider(url, { timeoutMs: 50, retries: 1 }, (upstream) =>
        failure(upstream.call("getTweet", "1"))
      )
      assert.strictEqual(error.reason, "timeout")
      assert.strictEqual(error.platform, "microblog")
      assert.strictEqual(stats.calls, 2)
    })
  )

  it.live("retries failing calls, then reports the provider's reason and Retry-After", () =>
    Effect.gen(function* () {
      const { url, stats } = yield* startUpstream
      yield* setFaults(url, { errorRate: 1 })
      const error = yield* withProvider(url, { retries: 2 }, (upstream) =>
        failure(upstream.call("getPerson", { slug: "anyone" }))
      )
      assert.deepInclude(error, { reason: "error", platform: "profnet", retryAfterSeconds: 5 })
      assert.strictEqual(stats.calls, 3)
    })
  )

  it.live("opens a platform's circuit after 5 failed calls, probes once, and closes on success", () =>
    Effect.gen(function* () {
      const { url, stats } = yield* startUpstream
      yield* setFaults(url, { outage: true })
      yield* withProvider(url, { retries: 0, breakerOpenMs: 1000 }, (upstream) =>
        Effect.gen(function* () {
          const tweet = upstream.call("getTweet", "1")
          for (let n = 0; n < 5; n++) {
            assert.deepInclude(yield* failure(tweet), { reason: "outage", retryAfterSeconds: 30 })
          }
          assert.strictEqual(stats.calls, 5)
          assert.deepInclude(yield* failure(tweet), { reason: "circuit_open", retryAfterSeconds: 1 })
          assert.strictEqual(stats.calls, 5)
          // Another platform has its own circuit.
          assert.strictEqual((yield* failure(upstream.call("getThread", "x", 1, "top"))).reason, "outage")
          assert.strictEqual(stats.calls, 6)

          // Half-open: one probe reaches the provider (and fails, slowly); the others fail fast.
          yield* setFaults(url, { outage: false, errorRate: 1, latencyMs: { min: 200, max: 200 } })
          yield* Effect.sleep("1200 millis")
          const outcomes = yield* Effect.all([failure(tweet), failure(tweet), failure(tweet)], {
            concurrency: "unbounded"
          })
          assert.deepStrictEqual(outcomes.map((error) => error.reason).sort(), [
            "circuit_open",
            "circuit_open",
            "error"
          ])
          assert.strictEqual(stats.calls, 7)
          assert.strictEqual((yield* failure(tweet)).reason, "circuit_open")

          yield* setFaults(url, { errorRate: 0, latencyMs: { min: 0, max: 0 } })
          yield* Effect.sleep("1200 millis")
          assert.deepStrictEqual(yield* tweet, worldAnswer("getTweet", "1"))
          yield* tweet
          assert.strictEqual(stats.calls, 9)
        })
      )
    })
  )

  it.live("answers 400 to arguments outside the method's declaration, and null for an absent cursor", () =>
    Effect.gen(function* () {
      const { url } = yield* startUpstream
      const call = (method: string, args: ReadonlyArray<unknown>) =>
        post(`${url}/v1/call/${method}`, { args })
      for (const [method, args] of [
        ["getPerson", [{}]],
        ["getPerson", [{ slug: 7 }]],
        ["getThread", ["x", 1.5, "top"]],
        ["getThread", ["x", 1, "sideways"]],
        ["getTweets", ["someone", false]],
        ["getTweets", ["someone", "false", null]],
        ["getForumPosts", ["not-a-list"]]
      ] as const) {
        const reply = yield* call(method, args)
        assert.strictEqual(reply.status, 400, `${method} ${JSON.stringify(args)}`)
        assert.deepInclude(reply.body, { error: "bad_request" })
      }
      const first = yield* call("getPersonPosts", ["no-such-person-anywhere", null])
      assert.deepStrictEqual(first, { status: 200, body: { result: null } })
      const posts = yield* call("getForumPosts", [["no-such-post"]])
      assert.deepStrictEqual(posts, { status: 200, body: { result: [null] } })
    })
  )

  it.live("does not send arguments outside the method's declaration: they are our bug, a defect", () =>
    Effect.gen(function* () {
      const { url, stats } = yield* startUpstream
      yield* withProvider(url, {}, (upstream) =>
        Effect.gen(function* () {
          // More than it takes failures to open the circuit: a defect of ours does not count.
          for (let n = 0; n < 6; n++) {
            // The cast forges what the typecheck refuses.
            const exit = yield* Effect.exit(upstream.call("getPerson", {} as never))
            assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
          }
          assert.strictEqual(stats.calls, 0)
          assert.isUndefined(yield* upstream.call("getPerson", { slug: "no-such-person-anywhere" }))
          assert.strictEqual(stats.calls, 1)
        })
      )
    })
  )

  it.live("never has more requests in flight per platform than its cap", () =>
    Effect.gen(function* () {
      const { url, stats } = yield* startUpstream
      yield* setFaults(url, { latencyMs: { min: 20, max: 60 } })
      const answers = yield* withProvider(url, { maxInFlight: 4 }, (upstream) =>
        Effect.all(
          Array.from({ length: 40 }, (_, n) => upstream.call("getTweet", String(n))),
          { concurrency: "unbounded" }
        )
      )
      assert.strictEqual(answers.length, 40)
      assert.strictEqual(stats.calls, 40)
      assert.isAtMost(stats.maxInFlight, 4)
      assert.isAtLeast(stats.maxInFlight, 1)
    })
  )

  it.live("sets fault knobs over HTTP, per platform", () =>
    Effect.gen(function* () {
      const { url } = yield* startUpstream
      assert.strictEqual((yield* post(`${url}/faults`, { errorRate: 2 })).status, 400)
      const set = yield* setFaults(url, { paused: ["forum"] })
      assert.deepStrictEqual(set.body, {
        latencyMs: { min: 0, max: 0 },
        errorRate: 0,
        outage: false,
        paused: ["forum"]
      })
      const current = yield* Effect.promise(() => fetch(`${url}/faults`).then((response) => response.json()))
      assert.deepStrictEqual(current, set.body)
      yield* withProvider(url, { retries: 0 }, (upstream) =>
        Effect.gen(function* () {
          const paused = yield* failure(upstream.call("getCommunity", "python", false))
          assert.deepInclude(paused, { reason: "paused", platform: "forum", retryAfterSeconds: 60 })
          assert.isDefined(yield* upstream.call("getPerson", { slug: "x" }).pipe(Effect.as(true)))
        })
      )
    })
  )
})

describe("HttpProvider against a misbehaving provider", () => {
  const provider = (response: HttpServerResponse.HttpServerResponse) =>
    serve(HttpRouter.add("POST", "/v1/call/:method", response))

  it.live("does not retry a request the provider rejects, nor count it against the provider", () =>
    Effect.gen(function* () {
      // A provider of another contract version: it refuses some arguments ours accepts.
      const { url, stats } = yield* serve(
        HttpRouter.add(
          "POST",
          "/v1/call/:method",
          Effect.gen(function* () {
            const body = yield* Effect.orDie(
              HttpServerRequest.HttpServerRequest.pipe(Effect.flatMap((r) => r.json))
            )
            return JSON.stringify(body).includes("rejected")
              ? HttpServerResponse.jsonUnsafe({ error: "bad_request" }, { status: 400 })
              : HttpServerResponse.jsonUnsafe({ result: null })
          })
        )
      )
      yield* withProvider(url, { retries: 2 }, (upstream) =>
        Effect.gen(function* () {
          // More rejections than it takes failures to open the circuit.
          for (let n = 0; n < 6; n++) {
            const invalid = yield* failure(upstream.call("getPerson", { slug: "rejected" }))
            assert.deepInclude(invalid, { reason: "bad_response", platform: "profnet" })
          }
          assert.strictEqual(stats.calls, 6)
          assert.isUndefined(yield* upstream.call("getPerson", { slug: "still-closed" }))
          assert.strictEqual(stats.calls, 7)
        })
      )
    })
  )

  it.live("honours Retry-After on 429 and retries it", () =>
    Effect.gen(function* () {
      const { url, stats } = yield* provider(
        HttpServerResponse.jsonUnsafe({}, { status: 429, headers: { "retry-after": "7" } })
      )
      const error = yield* withProvider(url, { retries: 1 }, (upstream) =>
        failure(upstream.call("getTweet", "1"))
      )
      assert.deepInclude(error, { reason: "error", retryAfterSeconds: 7 })
      assert.strictEqual(stats.calls, 2)
    })
  )

  it.live("takes 404 (a method the provider does not know) as a bad response, without retrying", () =>
    Effect.gen(function* () {
      const { url, stats } = yield* provider(HttpServerResponse.jsonUnsafe({}, { status: 404 }))
      const error = yield* withProvider(url, {}, (upstream) => failure(upstream.call("getTweet", "1")))
      assert.strictEqual(error.reason, "bad_response")
      assert.strictEqual(stats.calls, 1)
    })
  )

  it.live("rejects an answer that is not JSON, without retrying", () =>
    Effect.gen(function* () {
      const { url, stats } = yield* provider(HttpServerResponse.text("<html>oops</html>"))
      const error = yield* withProvider(url, {}, (upstream) => failure(upstream.call("getTweet", "1")))
      assert.strictEqual(error.reason, "bad_response")
      assert.strictEqual(stats.calls, 1)
    })
  )

  it.live("reports a provider nobody listens for as unreachable", () =>
    Effect.gen(function* () {
      const port = yield* freePort
      const error = yield* withProvider(`http://127.0.0.1:${port}`, { retries: 1 }, (upstream) =>
        failure(upstream.call("getTweet", "1"))
      )
      assert.deepInclude(error, { reason: "unreachable", retryAfterSeconds: 5 })
    })
  )

  it.effect("reads Retry-After as seconds or as an HTTP date", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* parseRetryAfter("12"), Option.some(12))
      assert.deepStrictEqual(yield* parseRetryAfter("Thu, 01 Jan 1970 00:00:30 GMT"), Option.some(30))
      assert.deepStrictEqual(yield* parseRetryAfter("soon"), Option.none())
      assert.deepStrictEqual(yield* parseRetryAfter(undefined), Option.none())
    })
  )
})

describe("HttpProvider.layerFromConfig", () => {
  const fromEnv = <A, E>(
    env: Record<string, string>,
    f: (upstream: Upstream["Service"]) => Effect.Effect<A, E>
  ) =>
    Effect.provide(
      Effect.gen(function* () {
        return yield* f(yield* Upstream)
      }),
      layerFromConfig.pipe(
        Layer.provide([ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)), UpstreamFaults.layer])
      )
    )

  it.live("calls the provider at UPSTREAM_URL, and the simulated world without one", () =>
    Effect.gen(function* () {
      const { url, stats } = yield* startUpstream
      const person = { slug: "no-such-person-anywhere" }
      assert.isUndefined(
        yield* fromEnv({ UPSTREAM_URL: url }, (upstream) => upstream.call("getPerson", person))
      )
      assert.strictEqual(stats.calls, 1)
      const query = { keywords: "engineer" }
      const local = yield* fromEnv({ WORLD_SEED: seed }, (upstream) =>
        upstream.call("searchPeople", query, undefined, 5)
      )
      assert.deepStrictEqual(local, worldAnswer("searchPeople", query, undefined, 5))
      assert.strictEqual(stats.calls, 1)
      const partial = yield* Effect.exit(
        fromEnv({ UPSTREAM_URL_FORUM: url }, (upstream) => upstream.call("getTweet", "1"))
      )
      assert.isTrue(Exit.isFailure(partial))
    })
  )
})
