import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { hashSecret } from "../../src/domain/secrets.ts"
import { TestApp, testApp } from "../support/app.ts"
import { realPause } from "../support/clock.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const day = 86_400_000
const keep = defaultPolicy.checkoutKeepMs
const stripeKeep = defaultPolicy.stripeCheckoutKeepMs

interface SessionRow {
  readonly name: string
  readonly rail: "local" | "stripe"
  readonly status: "open" | "paid" | "expired"
  /** Its expiry, relative to now. */
  readonly expiresIn: number
  readonly swept: boolean
}

/**
 * Housekeeping deletes checkout sessions nobody can pay any more and ended portal links: the
 * audit's 20,522 sessions stayed forever. Paid sessions are the purchase history and stay. The
 * server runs on the TestClock: rows are written with their expiry in the past, and the clock moves
 * one housekeeping interval.
 */
describe(`the sweep of ended checkout sessions and portal links (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000 })((it) => {
    it.effect("the defaults: unpaid sessions and portal links a day past expiry, Stripe's 30 days", () =>
      Effect.sync(() => {
        assert.strictEqual(keep, day)
        assert.strictEqual(stripeKeep, 30 * day)
      })
    )

    it.effect(
      "unpaid sessions past their retention are deleted by the housekeeping loop; paid ones and younger ones stay",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const sql = yield* SqlClient.SqlClient
          const { account_id } = yield* app.mint("10.93.0.1")
          const now = yield* Clock.currentTimeMillis
          const sessions: ReadonlyArray<SessionRow> = [
            { name: "local-open-old", rail: "local", status: "open", expiresIn: -keep - 1, swept: true },
            {
              name: "local-open-young",
              rail: "local",
              status: "open",
              expiresIn: -keep + 5 * 60_000,
              swept: false
            },
            { name: "local-open-live", rail: "local", status: "open", expiresIn: day, swept: false },
            // A session whose rail failed at the start is marked expired at once.
            { name: "local-failed-old", rail: "local", status: "expired", expiresIn: -keep - 1, swept: true },
            { name: "local-paid-old", rail: "local", status: "paid", expiresIn: -400 * day, swept: false },
            // Stripe may still report a payment (a delayed method, a webhook retried for days).
            { name: "stripe-open-month", rail: "stripe", status: "open", expiresIn: -keep - 1, swept: false },
            {
              name: "stripe-open-old",
              rail: "stripe",
              status: "open",
              expiresIn: -stripeKeep - 1,
              swept: true
            },
            { name: "stripe-paid-old", rail: "stripe", status: "paid", expiresIn: -400 * day, swept: false }
          ]
          const tokenOf = (name: string) => `cs_${name.replace(/-/g, "").padEnd(43, "x")}`
          for (const session of sessions) {
            const paid = session.status === "paid"
            yield* sql`INSERT INTO checkout_sessions (id, token_hash, account_id, pack, rail, status, keyless,
                expires_at, paid_at, created_at)
              VALUES (${`chk_${session.name}`}, ${hashSecret(tokenOf(session.name))}, ${paid ? account_id : null},
                'flex', ${session.rail}, ${session.status}, ${!paid}, ${now + session.expiresIn},
                ${paid ? now + session.expiresIn - 60_000 : null}, ${now + session.expiresIn - day})`
          }
          const portals = [
            { name: "portal-old", expiresIn: -keep - 1, swept: true },
            { name: "portal-young", expiresIn: -60_000, swept: false },
            { name: "portal-live", expiresIn: 60_000, swept: false }
          ]
          for (const portal of portals) {
            yield* sql`INSERT INTO portal_sessions (token_hash, account_id, expires_at, created_at)
              VALUES (${hashSecret(portal.name)}, ${account_id}, ${now + portal.expiresIn},
                ${now + portal.expiresIn - 3_600_000})`
          }
          const left = Effect.gen(function* () {
            const checkout = yield* sql<{
              id: string
            }>`SELECT id FROM checkout_sessions WHERE id LIKE 'chk_%-%'`
            const portal = yield* sql<{ token_hash: string }>`SELECT token_hash FROM portal_sessions
              WHERE account_id = ${account_id}`
            return {
              checkout: checkout.map((row) => row.id.slice(4)).sort(),
              portal: portals
                .filter((p) => portal.some((row) => row.token_hash === hashSecret(p.name)))
                .map((p) => p.name)
            }
          })
          const expected = {
            checkout: sessions
              .filter((s) => !s.swept)
              .map((s) => s.name)
              .sort(),
            portal: portals.filter((p) => !p.swept).map((p) => p.name)
          }
          // One interval of the slower housekeeping; the loop's statements run on the server's fibers.
          yield* TestClock.adjust("1 minute")
          let found = yield* left
          for (
            let attempt = 0;
            attempt < 500 && JSON.stringify(found) !== JSON.stringify(expected);
            attempt++
          ) {
            yield* realPause(10)
            found = yield* left
          }
          assert.deepStrictEqual(found, expected)
          // A swept session is unknown everywhere; a kept one still answers.
          const swept = yield* app.call(`/v1/checkout/${tokenOf("local-open-old")}`)
          assert.strictEqual(swept.status, 404)
          assert.strictEqual(swept.body.code, "NOT_FOUND")
          const kept = yield* app.call(`/v1/checkout/${tokenOf("stripe-open-month")}`)
          assert.strictEqual(kept.status, 200)
          assert.strictEqual(kept.body.status, "expired")
          const history = yield* app.call(`/v1/checkout/${tokenOf("local-paid-old")}`)
          assert.strictEqual(history.body.status, "paid")
        }).pipe(Effect.orDie)
    )
  })
})
