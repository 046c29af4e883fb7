import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { AppConfig } from "../../src/config.ts"
import { ServicesLayer } from "../../src/service.ts"
import { Cache } from "../../src/services/Cache.ts"
import { UpstreamFailure } from "../../src/upstream/Upstream.ts"
import { freshDatabase, storeName } from "../support/database.ts"

const services = ServicesLayer.pipe(Layer.provideMerge(freshDatabase), Layer.provide(AppConfig.layerTest()))
const outage = Effect.fail(
  new UpstreamFailure({ platform: "profnet", reason: "outage", retryAfterSeconds: 30 })
)

describe(`cache ages in virtual time (${storeName})`, () => {
  layer(services, { timeout: 60_000 })((it) => {
    it.effect("an absent answer (not found) is cached and read back as absent", () =>
      Effect.gen(function* () {
        const cache = yield* Cache
        const first = yield* cache.through("test:absent", "recent", Effect.succeed(undefined))
        assert.deepStrictEqual([first.value, first.served], [undefined, "realtime"])
        const again = yield* cache.through("test:absent", "recent", Effect.die("fetched again"))
        assert.deepStrictEqual([again.value, again.served], [undefined, "recent"])
      })
    )

    it.effect("a copy is recent for 6 hours and a realtime fallback for 7 days", () =>
      Effect.gen(function* () {
        const cache = yield* Cache
        const key = "test:ages"
        yield* TestClock.adjust("1 hour")
        const first = yield* cache.through(key, "recent", Effect.succeed("v1"))
        assert.deepStrictEqual([first.value, first.served], ["v1", "realtime"])
        yield* TestClock.adjust("5 hours")
        const young = yield* cache.through(key, "recent", Effect.succeed("v2"))
        assert.deepStrictEqual([young.value, young.served], ["v1", "recent"])
        yield* TestClock.adjust("1 hour")
        const refreshed = yield* cache.through(key, "recent", Effect.succeed("v2"))
        assert.deepStrictEqual([refreshed.value, refreshed.served], ["v2", "realtime"])
        yield* TestClock.adjust("6 days")
        const fallback = yield* cache.through(key, "realtime", outage)
        assert.deepStrictEqual([fallback.value, fallback.served], ["v2", "cached_fallback"])
        const staleRecent = yield* Effect.flip(cache.through(key, "recent", outage))
        assert.strictEqual(staleRecent.code, "UPSTREAM_UNAVAILABLE")
        yield* TestClock.adjust("2 days")
        const gone = yield* Effect.flip(cache.through(key, "realtime", outage))
        assert.strictEqual(gone.retry_after_seconds, 30)
      })
    )
  })
})
