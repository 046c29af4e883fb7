import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AdminClient } from "../../src/clients/operator-cli/AdminClient.ts"
import { Checkout, localPeriodMs } from "../../src/payments/Checkout.ts"
import { buy } from "../billing/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { runCli } from "./cli.ts"

const withAdmin = <A, E, R>(f: (admin: AdminClient["Service"]) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    return yield* Effect.gen(function* () {
      return yield* f(yield* AdminClient)
    }).pipe(Effect.provide(AdminClient.layerFor(app.url, "test-admin-token-7f3a9c2e5b8d1f4a6c")))
  })

const cli = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const run = yield* runCli(args, {
      SVC_BASE_URL: app.url,
      SVC_ADMIN_TOKEN: "test-admin-token-7f3a9c2e5b8d1f4a6c"
    })
    assert.strictEqual(run.code, 0, run.stderr)
    return JSON.parse(run.stdout)
  })

// Live services: the RPC client times its interrupt messages with the Clock, which a TestClock would freeze.
describe(`admin purchases and renew (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("purchases lists a local production purchase and its subscription; renew adds a period", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.45.0.1"
        const { key, account_id } = yield* app.mint(ip)
        const bought = yield* buy(app, "production", { key, ip })
        const before = yield* withAdmin((admin) => admin.purchases({ accountId: account_id }))
        assert.strictEqual(before.account_id, account_id)
        assert.strictEqual(before.purchases.length, 1)
        const first = before.purchases[0]!
        assert.strictEqual(first.pack, "production")
        assert.strictEqual(first.rail, "local")
        assert.match(first.payment_ref, /^local:chk_/)
        assert.strictEqual(first.credits, 75_000)
        assert.strictEqual(first.price_usd_cents, 9_900)
        // The period is counted from the payment; the purchase row is written a moment later.
        assert.closeTo(first.period_end! - first.created_at, localPeriodMs, 1_000)
        assert.deepStrictEqual(before.subscription, {
          pack: "production",
          rail: "local",
          status: "active",
          current_period_end: first.period_end!,
          cancel_at_period_end: false
        })
        assert.strictEqual(bought.read.status, "paid")

        const renewed = yield* cli(["admin", "renew", "--account", account_id])
        assert.deepStrictEqual(renewed, {
          account_id,
          renewed: true,
          current_period_end: first.period_end! + localPeriodMs,
          balance_credits: 150_000
        })
        const after = yield* cli(["admin", "purchases", "--account", account_id])
        assert.strictEqual(after.purchases.length, 2)
        assert.match(after.purchases[0].payment_ref, /^local:sub_[0-9A-Za-z_]+:2$/)
        assert.strictEqual(after.purchases[0].credits, 75_000)
        assert.strictEqual(after.purchases[0].period_end, first.period_end! + localPeriodMs)
        assert.strictEqual(after.purchases[1].id, first.id)
        assert.strictEqual(after.subscription.current_period_end, first.period_end! + localPeriodMs)
        const usage = yield* app.call("/v1/usage", { key, ip })
        assert.strictEqual(usage.body.balance.purchased, 150_000)
      })
    )

    it.effect("a subscription set to cancel at period end is canceled by renew, with no credit", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const checkout = yield* Checkout
        const ip = "10.45.0.2"
        const { key, account_id } = yield* app.mint(ip)
        yield* buy(app, "production", { key, ip })
        assert.isTrue(yield* Effect.orDie(checkout.cancelAtPeriodEnd(account_id)))
        const pending = yield* withAdmin((admin) => admin.purchases({ accountId: account_id }))
        assert.isTrue(pending.subscription!.cancel_at_period_end)
        assert.strictEqual(pending.subscription!.status, "active")
        const renewed = yield* withAdmin((admin) => admin.renew({ accountId: account_id }))
        assert.isFalse(renewed.renewed)
        assert.strictEqual(renewed.current_period_end, pending.subscription!.current_period_end)
        assert.strictEqual(renewed.balance_credits, 75_000)
        const after = yield* withAdmin((admin) => admin.purchases({ accountId: account_id }))
        assert.strictEqual(after.purchases.length, 1)
        assert.strictEqual(after.subscription!.status, "canceled")
        const again = yield* withAdmin((admin) => admin.renew({ accountId: account_id }))
        assert.deepStrictEqual(again, {
          account_id,
          renewed: false,
          current_period_end: null,
          balance_credits: 75_000
        })
      })
    )

    it.effect("a flex account has purchases and no subscription; renew changes nothing", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.45.0.3"
        const { key, account_id } = yield* app.mint(ip)
        yield* buy(app, "flex", { key, ip })
        const report = yield* cli(["admin", "purchases", "--account", account_id])
        assert.strictEqual(report.purchases.length, 1)
        assert.strictEqual(report.purchases[0].pack, "flex")
        assert.strictEqual(report.purchases[0].credits, 10_000)
        assert.isNull(report.purchases[0].period_end)
        assert.isNull(report.subscription)
        const renewed = yield* cli(["admin", "renew", "--account", account_id])
        assert.deepStrictEqual(renewed, {
          account_id,
          renewed: false,
          current_period_end: null,
          balance_credits: 10_000
        })
      })
    )

    it.effect("unknown accounts are AccountNotFound; the CLI needs --account", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const purchases = yield* Effect.flip(
          withAdmin((admin) => admin.purchases({ accountId: "acct_nobody" }))
        )
        assert.strictEqual(purchases._tag, "AccountNotFound")
        const renew = yield* Effect.flip(withAdmin((admin) => admin.renew({ accountId: "acct_nobody" })))
        assert.strictEqual(renew._tag, "AccountNotFound")
        const env = { SVC_BASE_URL: app.url, SVC_ADMIN_TOKEN: "test-admin-token-7f3a9c2e5b8d1f4a6c" }
        const missing = yield* runCli(["admin", "renew"], env)
        assert.strictEqual(missing.code, 2)
        const unknown = yield* runCli(["admin", "purchases", "--account", "acct_nobody"], env)
        assert.notStrictEqual(unknown.code, 0)
      })
    )
  })
})
