import { assert, describe, layer } from "@effect/vitest"
import { Data, Deferred, Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import { Admin } from "../../src/operator/Admin.ts"
import { TestApp, testApp } from "../support/app.ts"
import { realPause } from "../support/clock.ts"
import { postgresUrl, storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { buy, moneyOf, pay, startCheckout } from "./support.ts"

class RolledBack extends Data.TaggedError("RolledBack")<{}> {}

/** Waits (real time) until `n` sessions of this database wait on a lock. */
const untilWaiting = (n: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    for (let attempt = 0; attempt < 2_000; attempt++) {
      const rows = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`
      if (Number(rows[0]?.n) >= n) return
      yield* realPause(5)
    }
    return yield* Effect.die(new Error(`fewer than ${n} sessions came to wait on a lock`))
  }).pipe(Effect.orDie)

/**
 * Lock order between a local renewal and a payment of the same account, on PostgreSQL (PGlite has
 * one connection, so nothing interleaves there). A third session holds the renewal's purchase key
 * so that the renewal has locked the subscription and the payment has locked the account before
 * either goes on; then it lets go.
 */
describe.skipIf(postgresUrl === undefined)(`renewal and payment at once (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    // Both take the account's row lock first (renewLocal before the subscription's), so neither
    // waits for the other in reverse order: PostgreSQL reported "deadlock detected" before.
    it.effect("a renewal racing a new production payment: both complete, each credited once", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const sql = yield* SqlClient.SqlClient
        const ip = "10.67.0.1"
        const { key, account_id } = yield* app.mint(ip)
        yield* buy(app, "production", { key, ip })
        const next = yield* startCheckout(app, { pack: "production" }, { key, ip })
        const subscriptions = yield* sql<{ id: string }>`SELECT id FROM subscriptions
          WHERE account_id = ${account_id} AND status = 'active'`
        const renewalRef = `local:${subscriptions[0]!.id}:2`

        const release = yield* Deferred.make<void>()
        const holding = yield* Deferred.make<void>()
        const holder = yield* Effect.forkChild(
          sql
            .withTransaction(
              Effect.gen(function* () {
                yield* sql`INSERT INTO purchases (id, account_id, pack, rail, payment_ref, credits,
                    price_usd_cents, currency, created_at)
                  VALUES ('pur_holder', ${account_id}, 'production', 'local', ${renewalRef}, 0, 0, 'usd', 0)`
                yield* Deferred.succeed(holding, undefined)
                yield* Deferred.await(release)
                return yield* new RolledBack()
              })
            )
            .pipe(Effect.ignore)
        )
        yield* Deferred.await(holding)
        const renewal = yield* Effect.forkChild(Effect.result(admin.renew(account_id)))
        yield* untilWaiting(1)
        const payment = yield* Effect.forkChild(pay(app, next.checkout_url))
        // With one lock order the payment either waits behind the renewal or (its row locks not
        // conflicting with the holder's) completes at once; it never waits in the reverse order.
        yield* Effect.raceFirst(Effect.asVoid(Fiber.await(payment)), untilWaiting(2))
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        const renewed = yield* Fiber.join(renewal)
        const paid = yield* Fiber.join(payment)

        assert.strictEqual(paid.status, 303, "the payment completes")
        assert.strictEqual(renewed._tag, "Success", `the renewal completes: ${JSON.stringify(renewed)}`)
        const money = yield* moneyOf(account_id)
        assert.strictEqual(money.balance, money.purchased)
        assert.isAtLeast(money.purchases, 2)
      })
    )
  })
})
