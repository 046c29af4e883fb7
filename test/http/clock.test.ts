import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { dayOf, dayToIso, msPerDay } from "../../src/domain/time.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { advanceUntilDone, untilInFlight } from "../support/clock.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const freshIp = ipSequence("10.21")
const uuid = () => crypto.randomUUID()

/**
 * Windows, UTC days and leases over HTTP in virtual time: the server is built in the test's layer,
 * so the services, the rate limiter and the operations read the TestClock, and "a minute later"
 * or "the next UTC day" is one `TestClock.adjust` instead of a sleep.
 */
describe(`windows, days and leases in virtual time (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000 })((it) => {
    it.effect("the per-minute rate limit reopens after exactly retry_after_seconds", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        for (let i = 0; i < 30; i++) {
          assert.strictEqual(
            (yield* app.call("/v1/profnet/test-echo?value=x&cost=1", { key, ip })).status,
            200
          )
        }
        const limited = yield* app.call("/v1/profnet/test-echo?value=x&cost=1", { key, ip })
        assert.strictEqual(limited.body.code, "RATE_LIMITED")
        assert.strictEqual(limited.body.retry_after_seconds, 60)
        yield* TestClock.adjust("59 seconds")
        const early = yield* app.call("/v1/profnet/test-echo?value=x&cost=1", { key, ip })
        assert.strictEqual(early.body.code, "RATE_LIMITED")
        assert.strictEqual(early.body.retry_after_seconds, 1)
        yield* TestClock.adjust("1 second")
        assert.strictEqual((yield* app.call("/v1/profnet/test-echo?value=x&cost=1", { key, ip })).status, 200)
      })
    )

    it.effect("an IP that minted its keys for the hour may mint again an hour later", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const mint = () => app.call("/v1/keys/mint", { method: "POST", ip })
        for (let i = 0; i < 5; i++) assert.strictEqual((yield* mint()).status, 200)
        const limited = yield* mint()
        assert.strictEqual(limited.body.code, "RATE_LIMITED")
        assert.strictEqual(limited.body.retry_after_seconds, 3600)
        yield* TestClock.adjust("1 hour")
        assert.strictEqual((yield* mint()).status, 200)
      })
    )

    it.effect(
      "the free budget of an IP starts afresh at 00:00 UTC; usage keeps the day before",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          assert.strictEqual(
            (yield* app.call("/v1/profnet/test-echo?value=x&cost=200", { key, ip })).status,
            200
          )
          const spent = yield* app.call("/v1/profnet/test-echo?value=x", { key, ip })
          assert.strictEqual(spent.body.code, "TRIAL_CAP_EXCEEDED")

          const now = yield* Clock.currentTimeMillis
          const day = dayOf(now)
          const usage = yield* app.call("/v1/usage", { key, ip })
          const midnight = (day + 1) * msPerDay
          assert.strictEqual(usage.body.free_tier.resets_at, new Date(midnight).toISOString())
          // Most of a day: the 5-second housekeeping runs some 17,000 times on the way (a few seconds on
          // PGlite, whose queries finish before the clock looks for the next sleep).
          yield* TestClock.adjust(midnight - now - 1)
          assert.strictEqual(
            (yield* app.call("/v1/profnet/test-echo?value=x", { key, ip })).body.code,
            "TRIAL_CAP_EXCEEDED"
          )
          yield* TestClock.adjust(1)

          assert.strictEqual((yield* app.call("/v1/profnet/test-echo?value=x", { key, ip })).status, 200)
          const next = yield* app.call("/v1/usage", { key, ip })
          assert.strictEqual(next.body.free_tier.used_today, 4)
          assert.deepStrictEqual(next.body.history, [
            { day: dayToIso(day + 1), credits: 4, calls: 1 },
            { day: dayToIso(day), credits: 200, calls: 1 }
          ])
        }),
      // Virtual time, but stepping through a day of housekeeping takes real seconds on a busy machine.
      300_000
    )

    it.effect(
      "a call stalled past its lease frees the account: the next call runs, the stalled one charges nothing",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const { key, ip, account_id } = yield* paidKey(freshIp(), 100)
          const stalled = yield* Effect.forkChild(
            app.call("/v1/profnet/test-echo?value=stalled&delay_ms=600000", {
              key,
              ip,
              idempotencyKey: uuid()
            })
          )
          yield* untilInFlight(account_id)
          const blocked = yield* app.call("/v1/profnet/test-echo?value=next", {
            key,
            ip,
            idempotencyKey: uuid()
          })
          assert.strictEqual(blocked.body.code, "CONCURRENCY_LIMIT")

          yield* TestClock.adjust("61 seconds")
          const next = yield* app.call("/v1/profnet/test-echo?value=next", {
            key,
            ip,
            idempotencyKey: uuid()
          })
          assert.strictEqual(next.status, 200)
          // The stalled call's next heartbeat finds its reservation refunded and stops it.
          const late = yield* advanceUntilDone(stalled, "5 seconds")
          assert.strictEqual(late.body.code, "INTERNAL")
          assert.strictEqual(late.body.retry_after_seconds, 1)
          const usage = yield* app.call("/v1/usage", { key, ip })
          assert.strictEqual(usage.body.balance.purchased, 96)
          assert.deepStrictEqual(usage.body.today, { credits: 4, calls: 1 })
        })
    )
  })

  // REPLAY_HOURS=2: the stored result is replayed for 2 hours, and the refusal after says so.
  layer(testApp(testOperations, { policy: { ...defaultPolicy, replayWindowMs: 2 * 3_600_000 } }), {
    timeout: 60_000
  })((it) => {
    it.effect("a stored result past the replay window is NOT_FOUND naming the configured window", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* paidKey(ip, 100)
        const idempotencyKey = uuid()
        const call = () => app.call("/v1/profnet/test-echo?value=x&cost=1", { key, ip, idempotencyKey })
        assert.strictEqual((yield* call()).status, 200)
        yield* TestClock.adjust("1 hour")
        assert.strictEqual((yield* call()).headers.get("idempotent-replayed"), "true")
        yield* TestClock.adjust("1 hour")
        const expired = yield* call()
        assert.strictEqual(expired.status, 404, JSON.stringify(expired.body))
        assert.strictEqual(expired.body.code, "NOT_FOUND")
        assert.include(expired.body.message, "results are kept 2 hours")
        assert.notInclude(expired.body.message, "24 hours")
      })
    )
  })
})
