import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Admin } from "../../src/operator/Admin.ts"
import { Checkout, localPeriodMs, portalTtlMs } from "../../src/payments/Checkout.ts"
import { post, signIn } from "../identity/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { buy, moneyOf } from "./support.ts"

const freshIp = ipSequence("10.65")

const subscriptionsOf = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ status: string; current_period_end: unknown; periods: unknown }>`
      SELECT status, current_period_end, periods FROM subscriptions WHERE account_id = ${accountId}
      ORDER BY created_at, id`
    return rows.map((row) => ({
      status: row.status,
      end: Number(row.current_period_end),
      periods: Number(row.periods)
    }))
  }).pipe(Effect.orDie)

/** Renewal, cancel at period end and the portal link, on the TestClock (the times are exact). */
describe(`local subscriptions and the portal link (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000 })((it) => {
    it.effect("renew adds 75,000 credits and a period; after a lapse the period starts now", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const sql = yield* SqlClient.SqlClient
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        yield* buy(app, "production", { key, ip })
        const now = yield* Clock.currentTimeMillis
        assert.deepStrictEqual(yield* subscriptionsOf(account_id), [
          { status: "active", end: now + localPeriodMs, periods: 1 }
        ])
        const renewed = yield* Effect.orDie(admin.renew(account_id))
        assert.deepStrictEqual(renewed, {
          account_id,
          renewed: true,
          current_period_end: now + 2 * localPeriodMs,
          balance_credits: 150_000
        })
        const usage = yield* app.call("/v1/usage", { key, ip })
        assert.strictEqual(usage.body.purchases.count, 2)
        assert.deepStrictEqual(usage.body.subscription, {
          pack: "production",
          rail: "local",
          status: "active",
          current_period_end: new Date(now + 2 * localPeriodMs).toISOString(),
          cancel_at_period_end: false
        })
        // A lapsed period (its end moved into the past through SqlClient): the next starts now.
        yield* sql`UPDATE subscriptions SET current_period_end = ${now - 1} WHERE account_id = ${account_id}`
        const late = (yield* Effect.orDie(admin.renew(account_id)))!
        assert.strictEqual(late.current_period_end, now + localPeriodMs)
        assert.strictEqual(late.balance_credits, 225_000)
        const money = yield* moneyOf(account_id)
        assert.strictEqual(money.purchases, 3)
        assert.strictEqual(money.purchased, 225_000)
        assert.strictEqual(money.plan, "production")
      })
    )

    it.effect("cancel at period end, then renew: canceled, no credit, shown by get_usage", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const checkout = yield* Checkout
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        yield* buy(app, "production", { key, ip })
        assert.isTrue(yield* Effect.orDie(checkout.cancelAtPeriodEnd(account_id)))
        const pending = yield* app.call("/v1/usage", { key, ip })
        assert.strictEqual(pending.body.subscription.status, "active")
        assert.isTrue(pending.body.subscription.cancel_at_period_end)
        const renewed = (yield* Effect.orDie(admin.renew(account_id)))!
        assert.isFalse(renewed.renewed)
        assert.strictEqual(renewed.balance_credits, 75_000)
        const after = yield* app.call("/v1/usage", { key, ip })
        assert.strictEqual(after.body.subscription.status, "canceled")
        // Without a subscription the account is a paid account on flex; its credits stay.
        assert.strictEqual(after.body.plan, "flex")
        assert.strictEqual(after.body.purchases.count, 1)
        assert.strictEqual(after.body.balance.purchased, 75_000)
        assert.isFalse(
          yield* Effect.orDie(checkout.cancelAtPeriodEnd(account_id)),
          "nothing active to cancel"
        )
        assert.isFalse((yield* Effect.orDie(admin.renew(account_id)))!.renewed)
        assert.strictEqual((yield* moneyOf(account_id)).purchases, 1)
      })
    )

    it.effect(
      "flex on a production account keeps production; a second production checkout replaces the subscription",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key, account_id } = yield* app.mint(ip)
          yield* buy(app, "production", { key, ip })
          yield* buy(app, "flex", { key, ip })
          let money = yield* moneyOf(account_id)
          assert.strictEqual(money.plan, "production")
          assert.strictEqual(money.balance, 85_000)
          yield* buy(app, "production", { key, ip })
          money = yield* moneyOf(account_id)
          assert.strictEqual(money.balance, 160_000)
          assert.strictEqual(money.purchases, 3)
          const subscriptions = yield* subscriptionsOf(account_id)
          assert.deepStrictEqual(
            subscriptions.map((row) => row.status),
            ["canceled", "active"]
          )
        })
    )

    it.effect(
      "POST /v1/portal with a management token is a local /portal?session= link for that account",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const checkout = yield* Checkout
          const sql = yield* SqlClient.SqlClient
          const ip = freshIp()
          const { key, account_id } = yield* app.mint(ip)
          const session = yield* signIn(app, "portal@billing.test", { key, ip })
          const link = yield* post(app, `/v1/portal?account_id=${account_id}`, undefined, {
            key: session.management_token,
            ip
          })
          assert.strictEqual(link.status, 200, JSON.stringify(link.body))
          assert.strictEqual(link.body.account_id, account_id)
          const match = /^http:\/\/svc\.test\/portal\?session=([0-9A-Za-z]{43})$/.exec(link.body.url)
          assert.isNotNull(match, link.body.url)
          const token = match![1]!
          assert.strictEqual(yield* Effect.orDie(checkout.portalAccount(token)), account_id)
          // One character changed (a different one: the token may end in "x" already).
          const tampered = `${token.slice(0, -1)}${token.endsWith("x") ? "y" : "x"}`
          assert.isUndefined(yield* Effect.orDie(checkout.portalAccount(tampered)))
          const now = yield* Clock.currentTimeMillis
          const stored = yield* sql<{ expires_at: unknown }>`SELECT expires_at FROM portal_sessions`
          assert.isTrue(stored.some((row) => Number(row.expires_at) === now + portalTtlMs))
          const second = yield* post(app, "/v1/portal", undefined, { key: session.management_token, ip })
          assert.strictEqual(second.status, 200)
          assert.notStrictEqual(second.body.url, link.body.url)
          const spendKey = yield* post(app, "/v1/portal", undefined, { key, ip })
          assert.strictEqual(spendKey.status, 401)
          assert.strictEqual(spendKey.body.code, "AUTH_REQUIRED")
          const none = yield* post(app, "/v1/portal", undefined, { ip })
          assert.strictEqual(none.status, 401)
        })
    )
  })
})
