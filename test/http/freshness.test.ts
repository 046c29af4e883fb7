import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { Cache } from "../../src/services/Cache.ts"
import { Upstream, UpstreamFaults } from "../../src/upstream/Upstream.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { profileSlugs } from "../support/profiles.ts"

const slugs = profileSlugs("manager")
let next = 0
const nextSlug = () => slugs[next++]!
const freshIp = ipSequence("10.40")

const paid = Effect.gen(function* () {
  const app = yield* TestApp
  const minted = yield* paidKey(freshIp(), 200)
  const ip = minted.ip
  const call = (path: string) => app.call(path, { key: minted.key, ip, idempotencyKey: crypto.randomUUID() })
  const balance = Effect.map(
    app.call("/v1/usage", { key: minted.key, ip }),
    (reply) => reply.body.balance.purchased as number
  )
  return { call, balance }
})

describe(`freshness and the cache (${storeName})`, () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("recent serves the cached copy; realtime fetches live for +2", () =>
      Effect.gen(function* () {
        const { call } = yield* paid
        const slug = nextSlug()
        const first = yield* call(`/v1/profnet/profiles?identifier=${slug}`)
        assert.strictEqual(first.body.freshness.served, "realtime")
        const second = yield* call(`/v1/profnet/profiles?identifier=${slug}`)
        assert.strictEqual(second.body.freshness.served, "recent")
        assert.strictEqual(second.body.freshness.fetched_at, first.body.freshness.fetched_at)
        const live = yield* call(`/v1/profnet/profiles?identifier=${slug}&freshness=realtime`)
        assert.strictEqual(live.body.freshness.served, "realtime")
        assert.deepStrictEqual(live.body.cost, { quoted: 6, charged: 6, refunded: 0 })
      })
    )

    it.effect("realtime during an outage serves the cached copy and refunds the 2", () =>
      Effect.gen(function* () {
        const faults = yield* UpstreamFaults
        const { call, balance } = yield* paid
        const slug = nextSlug()
        assert.strictEqual((yield* call(`/v1/profnet/profiles?identifier=${slug}`)).status, 200)
        yield* faults.set({ outage: true })
        const fallback = yield* call(`/v1/profnet/profiles?identifier=${slug}&freshness=realtime`)
        yield* faults.set({ outage: false })
        assert.strictEqual(fallback.status, 200)
        assert.strictEqual(fallback.body.freshness.served, "cached_fallback")
        assert.deepStrictEqual(fallback.body.cost, { quoted: 6, charged: 4, refunded: 2 })
        assert.deepStrictEqual(fallback.body.receipt.refunds, [{ reason: "realtime_fallback", credits: 2 }])
        assert.strictEqual(yield* balance, 200 - 4 - 4)
      })
    )

    it.effect(
      "a call that needs a live fetch during an outage is UPSTREAM_UNAVAILABLE and charges nothing",
      () =>
        Effect.gen(function* () {
          const faults = yield* UpstreamFaults
          const { call, balance } = yield* paid
          yield* faults.set({ outage: true })
          const recent = yield* call(`/v1/profnet/profiles?identifier=${nextSlug()}`)
          const realtime = yield* call(`/v1/profnet/profiles?identifier=${nextSlug()}&freshness=realtime`)
          yield* faults.set({ outage: false })
          for (const reply of [recent, realtime]) {
            assert.strictEqual(reply.status, 502)
            assert.strictEqual(reply.body.code, "UPSTREAM_UNAVAILABLE")
            assert.isAbove(reply.body.retry_after_seconds, 0)
          }
          assert.strictEqual(yield* balance, 200)
        })
    )

    it.effect("paused live fetching (operator) behaves like an outage; a paused platform likewise", () =>
      Effect.gen(function* () {
        const admin = yield* Admin
        const faults = yield* UpstreamFaults
        const { call } = yield* paid
        const slug = nextSlug()
        assert.strictEqual((yield* call(`/v1/profnet/profiles?identifier=${slug}`)).status, 200)
        yield* Effect.orDie(admin.settings({ livePaused: true }))
        const cached = yield* call(`/v1/profnet/profiles?identifier=${slug}`)
        const fallback = yield* call(`/v1/profnet/profiles?identifier=${slug}&freshness=realtime`)
        const miss = yield* call(`/v1/profnet/profiles?identifier=${nextSlug()}`)
        yield* Effect.orDie(admin.settings({ livePaused: false }))
        assert.strictEqual(cached.body.freshness.served, "recent")
        assert.strictEqual(fallback.body.freshness.served, "cached_fallback")
        assert.strictEqual(miss.body.code, "UPSTREAM_UNAVAILABLE")
        yield* faults.set({ paused: ["profnet"] })
        const paused = yield* call(`/v1/profnet/profiles?identifier=${nextSlug()}`)
        yield* faults.set({ paused: [] })
        assert.strictEqual(paused.body.code, "UPSTREAM_UNAVAILABLE")
      })
    )

    it.effect("concurrent misses for one key share a single live fetch", () =>
      Effect.gen(function* () {
        const cache = yield* Cache
        const faults = yield* UpstreamFaults
        yield* faults.set({ latencyMs: { min: 50, max: 50 } })
        let fetches = 0
        const live = Effect.sync(() => ++fetches).pipe(Effect.delay("50 millis"))
        const results = yield* Effect.all(
          Array.from({ length: 8 }, () => cache.through("test:single-flight", "realtime", live)),
          { concurrency: "unbounded" }
        )
        yield* faults.set({ latencyMs: { min: 0, max: 0 } })
        assert.strictEqual(fetches, 1)
        assert.isTrue(results.every((r) => r.value === 1))
      })
    )
  })
})

/** An upstream adapter with a bug: every call dies. */
const brokenUpstream = Layer.succeed(
  Upstream,
  Upstream.of({ call: () => Effect.die(new Error("adapter bug")) })
).pipe(Layer.provideMerge(UpstreamFaults.layer))

describe(`a defect in the upstream adapter (${storeName})`, () => {
  layer(testApp(operations, {}, brokenUpstream), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("is INTERNAL, not UPSTREAM_UNAVAILABLE, and charges nothing", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const reply = yield* app.call(`/v1/profnet/profiles?identifier=${nextSlug()}`, { key, ip })
        assert.strictEqual(reply.status, 500)
        assert.strictEqual(reply.body.code, "INTERNAL")
        assert.strictEqual((yield* app.call("/v1/usage", { key, ip })).body.free_tier.used_today, 0)
      })
    )
  })
})
