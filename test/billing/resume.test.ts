import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { hashSecret } from "../../src/domain/secrets.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { checkoutTtlMs } from "../../src/payments/Checkout.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { buy, moneyOf, pay, startCheckout } from "./support.ts"

const freshIp = ipSequence("10.64")
const uuid = () => crypto.randomUUID()
const echo = (query: string) => `/v1/profnet/test-echo?value=x&${query}`

/**
 * Expiry, the resume rules after payment and the plan's rate limit, in virtual time: the server
 * reads the TestClock, so a checkout's 24 hours pass in one adjustment and a minute's window
 * stays put while a test fills it.
 */
describe(`checkout expiry, resuming after payment, limits (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000 })((it) => {
    it.effect("a checkout open until expires_at, then expired: GET says expired, paying is NOT_FOUND", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        const keyed = yield* startCheckout(app, { pack: "flex" }, { key, ip })
        const keyless = yield* startCheckout(app, { pack: "production" }, { ip })
        const now = yield* Clock.currentTimeMillis
        assert.strictEqual(Date.parse(keyed.expires_at), now + checkoutTtlMs)
        // Moving the TestClock 24 hours would run a day of housekeeping loops: bring the sessions'
        // expiry to one second from now instead, and move the clock that second.
        for (const started of [keyed, keyless]) {
          yield* sql`UPDATE checkout_sessions SET expires_at = ${now + 1_000}
            WHERE token_hash = ${hashSecret(started.session_id)}`
        }
        yield* TestClock.adjust(999)
        for (const started of [keyed, keyless]) {
          assert.strictEqual((yield* app.call(`/v1/checkout/${started.session_id}`)).body.status, "open")
        }
        yield* TestClock.adjust(1)
        for (const started of [keyed, keyless]) {
          const read = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.strictEqual(read.status, 200)
          assert.strictEqual(read.body.status, "expired")
          assert.isUndefined(read.body.api_key)
          const paid = yield* pay(app, started.checkout_url)
          assert.strictEqual(paid.status, 404)
          assert.strictEqual((yield* app.call(new URL(started.checkout_url).pathname)).status, 404)
          assert.strictEqual((yield* app.call(`/v1/checkout/${started.session_id}`)).body.status, "expired")
        }
        const money = yield* moneyOf(account_id)
        assert.strictEqual(money.purchases, 0)
        assert.strictEqual(money.plan, "trial")
        const bought = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM purchases`
        assert.strictEqual(Number(bought[0]!.n), 0)
      })
    )

    it.effect(
      "TRIAL_CAP_EXCEEDED (realtime, free budget spent) → flex with that key → a fresh key succeeds",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key, account_id } = yield* app.mint(ip)
          const realtime = yield* app.call(echo("freshness=realtime"), { key, ip, idempotencyKey: uuid() })
          assert.strictEqual(realtime.status, 403)
          assert.strictEqual(realtime.body.code, "TRIAL_CAP_EXCEEDED")
          assert.strictEqual(realtime.body.offer.resume.action, "retry_fresh_idempotency_key")
          assert.include(realtime.body.offer.rails, "local")
          assert.strictEqual((yield* app.call(echo("cost=200"), { key, ip })).status, 200)
          const spentIdem = uuid()
          const spent = yield* app.call(echo("cost=4"), { key, ip, idempotencyKey: spentIdem })
          assert.strictEqual(spent.status, 403)
          assert.strictEqual(spent.body.code, "TRIAL_CAP_EXCEEDED")
          assert.strictEqual(spent.body.offer.resume.action, "retry_fresh_idempotency_key")

          const { read } = yield* buy(app, "flex", { key, ip })
          assert.strictEqual(read.account_id, account_id)
          const afterRealtime = yield* app.call(echo("freshness=realtime"), {
            key,
            ip,
            idempotencyKey: uuid()
          })
          assert.strictEqual(afterRealtime.status, 200, JSON.stringify(afterRealtime.body))
          assert.strictEqual(afterRealtime.body.receipt.funding.free_tier, 0)
          const afterSpent = yield* app.call(echo("cost=4"), { key, ip, idempotencyKey: uuid() })
          assert.strictEqual(afterSpent.status, 200)
          assert.deepStrictEqual(afterSpent.body.receipt.funding, { free_tier: 0, grant: 0, balance: 4 })
          const money = yield* moneyOf(account_id)
          assert.strictEqual(money.balance, 10_000 - 4 - afterRealtime.body.receipt.funding.balance)
          assert.strictEqual(money.chargedBalance, 4 + afterRealtime.body.receipt.funding.balance)
        })
    )

    it.effect("BUDGET_EXHAUSTED (free tier closed) → flex with that key → a fresh key succeeds", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        yield* Effect.orDie(admin.settings({ freeTierOpen: false }))
        const reopen = Effect.orDie(admin.settings({ freeTierOpen: true }))
        yield* Effect.gen(function* () {
          const closed = yield* app.call(echo("cost=4"), { key, ip, idempotencyKey: uuid() })
          assert.strictEqual(closed.status, 503)
          assert.strictEqual(closed.body.code, "BUDGET_EXHAUSTED")
          assert.strictEqual(closed.body.offer.resume.action, "retry_fresh_idempotency_key")
          yield* buy(app, "flex", { key, ip })
          const paid = yield* app.call(echo("cost=4"), { key, ip, idempotencyKey: uuid() })
          assert.strictEqual(paid.status, 200, JSON.stringify(paid.body))
          assert.deepStrictEqual(paid.body.receipt.funding, { free_tier: 0, grant: 0, balance: 4 })
          assert.strictEqual((yield* moneyOf(account_id)).balance, 9_996)
        }).pipe(Effect.ensuring(reopen))
      })
    )

    it.effect("INSUFFICIENT_CREDITS with key K → pay → the SAME K succeeds, charged once", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        yield* buy(app, "flex", { key, ip })
        for (let i = 0; i < 10; i++) {
          const drained = yield* app.call(echo("cost=1000"), { key, ip, idempotencyKey: uuid() })
          assert.strictEqual(drained.status, 200)
        }
        assert.strictEqual((yield* moneyOf(account_id)).balance, 0)
        const k = uuid()
        const short = yield* app.call(echo("cost=4"), { key, ip, idempotencyKey: k })
        assert.strictEqual(short.status, 402)
        assert.strictEqual(short.body.code, "INSUFFICIENT_CREDITS")
        assert.strictEqual(short.body.credits_required, 4)
        assert.strictEqual(short.body.offer.resume.action, "retry_same_idempotency_key")

        yield* buy(app, "flex", { key, ip })
        const resumed = yield* app.call(echo("cost=4"), { key, ip, idempotencyKey: k })
        assert.strictEqual(resumed.status, 200, JSON.stringify(resumed.body))
        assert.strictEqual(resumed.body.receipt.idempotency_key, k)
        assert.deepStrictEqual(resumed.body.receipt.funding, { free_tier: 0, grant: 0, balance: 4 })
        const replay = yield* app.call(echo("cost=4"), { key, ip, idempotencyKey: k })
        assert.strictEqual(replay.status, 200)
        assert.strictEqual(replay.headers.get("x-credits-charged"), "0")
        assert.strictEqual(replay.body.receipt.id, resumed.body.receipt.id)
        const money = yield* moneyOf(account_id)
        assert.strictEqual(money.purchases, 2)
        assert.strictEqual(money.balance, 20_000 - 10_000 - 4)
        assert.strictEqual(money.chargedBalance, 10_004)
      })
    )

    it.effect(
      "the rate limit follows the plan at once: trial 30/min, then flex 120/min in the same minute",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          // The test app runs on AppConfig.layerTest, whose policy is the default one.
          const policy = defaultPolicy
          const trial = policy.ratePerMinute.trial
          const flex = policy.ratePerMinute.flex
          assert.isBelow(trial, flex)
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          assert.strictEqual((yield* app.call("/v1/usage", { key, ip })).body.rate_limit_per_minute, trial)
          for (let i = 0; i < trial; i++) {
            assert.strictEqual((yield* app.call(echo("cost=1"), { key, ip })).status, 200)
          }
          const limited = yield* app.call(echo("cost=1"), { key, ip })
          assert.strictEqual(limited.body.code, "RATE_LIMITED")
          assert.include(limited.body.message, `At most ${trial} calls per minute on the trial plan`)
          assert.strictEqual(limited.body.offer.resume.action, "wait_and_retry")

          yield* buy(app, "flex", { key, ip })
          assert.strictEqual((yield* app.call("/v1/usage", { key, ip })).body.rate_limit_per_minute, flex)
          let allowed = 0
          let last = limited
          for (let i = 0; i < flex; i++) {
            last = yield* app.call(echo("cost=1"), { key, ip, idempotencyKey: uuid() })
            if (last.status !== 200) break
            allowed++
          }
          // The minute's window counts the trial calls too: flex's limit leaves the difference.
          assert.strictEqual(allowed, flex - trial)
          assert.strictEqual(last.body.code, "RATE_LIMITED")
          assert.include(last.body.message, `At most ${flex} calls per minute on the flex plan`)
          assert.isUndefined(last.body.offer, "paid accounts get no offer on a limit")
        })
    )
  })
})
