import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Admin } from "../../src/operator/Admin.ts"
import { ipSequence } from "../support/accounts.ts"
import { type Reply, TestApp, testApp } from "../support/app.ts"
import { realPause } from "../support/clock.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { moneyOf, pay, startCheckout } from "./support.ts"

const freshIp = ipSequence("10.66")

/** Waits (in real time) until no call holds a reservation: every request has settled or released. */
const untilQuiet = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (let attempt = 0; attempt < 2_000; attempt++) {
    const held = yield* sql`SELECT id FROM calls WHERE state = 'reserved'`
    if (held.length === 0) return
    yield* realPause(5)
  }
  return yield* Effect.die(new Error("calls stayed reserved"))
}).pipe(Effect.orDie)

/** What the successful, first-time replies say they took from grant and balance. */
const chargedByReplies = (replies: ReadonlyArray<Reply>) =>
  replies
    .filter((reply) => reply.status === 200 && reply.body.receipt?.replayed !== true)
    .reduce((sum, reply) => sum + reply.body.receipt.funding.grant + reply.body.receipt.funding.balance, 0)

describe(`payments and charges at once (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect(
      "two production checkouts and a flex paid at once: one active subscription, every pack credited",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const sql = yield* SqlClient.SqlClient
          const ip = freshIp()
          const { key, account_id } = yield* app.mint(ip)
          const checkouts = yield* Effect.forEach(["production", "production", "flex"] as const, (pack) =>
            startCheckout(app, { pack }, { key, ip })
          )
          const answers = yield* Effect.all(
            checkouts.flatMap((checkout) => [
              pay(app, checkout.checkout_url),
              pay(app, checkout.checkout_url)
            ]),
            { concurrency: "unbounded" }
          )
          assert.isTrue(answers.every((answer) => answer.status === 303))
          const money = yield* moneyOf(account_id)
          assert.strictEqual(money.purchases, 3)
          assert.strictEqual(money.balance, 160_000)
          assert.strictEqual(money.plan, "production")
          const statuses = yield* sql<{ status: string }>`SELECT status FROM subscriptions
          WHERE account_id = ${account_id} ORDER BY status`
          assert.deepStrictEqual(
            statuses.map((row) => row.status),
            ["active", "canceled"]
          )
        })
    )

    it.effect(
      "many checkouts paid repeatedly and in parallel with charges: each account's credits add up, nothing negative",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const admin = yield* Admin
          const sql = yield* SqlClient.SqlClient
          const accounts = yield* Effect.forEach(
            Array.from({ length: 4 }, () => freshIp()),
            (ip) =>
              Effect.gen(function* () {
                const minted = yield* app.mint(ip)
                yield* Effect.orDie(admin.credit(minted.account_id, 60, "grant", "test grant"))
                const checkouts = yield* Effect.forEach(
                  ["flex", "flex", "production", "flex"] as const,
                  (pack) => startCheckout(app, { pack }, { key: minted.key, ip })
                )
                return { ...minted, ip, checkouts }
              })
          )
          const charge = (account: (typeof accounts)[number], cost: number, idempotencyKey: string) =>
            app.call(`/v1/profnet/test-echo?value=x&cost=${cost}`, {
              key: account.key,
              ip: account.ip,
              idempotencyKey
            })
          const charges = (round: number) =>
            accounts.flatMap((account) =>
              Array.from({ length: 8 }, (_, i) => {
                const idem = crypto.randomUUID()
                const cost = 30 + 10 * ((i + round) % 5)
                // Each Idempotency-Key twice: at most one charge for it.
                return [charge(account, cost, idem), charge(account, cost, idem)]
              }).flat()
            )
          const pays = accounts.flatMap((account) =>
            account.checkouts.flatMap((checkout) => [
              pay(app, checkout.checkout_url),
              pay(app, checkout.checkout_url),
              pay(app, checkout.checkout_url)
            ])
          )
          const mixed = [...pays.map((p) => Effect.as(p, undefined)), ...charges(0)]
          const first = yield* Effect.all(mixed, { concurrency: "unbounded" })
          const afterPaying = yield* Effect.all(charges(1), { concurrency: "unbounded" })
          const repaid = yield* Effect.all(pays, { concurrency: "unbounded" })
          assert.isTrue(repaid.every((answer) => answer.status === 303))
          yield* untilQuiet
          const replies = [...first, ...afterPaying].filter((reply): reply is Reply => reply !== undefined)
          assert.isAbove(
            replies.filter((reply) => reply.status === 200).length,
            0,
            "some charges went through"
          )
          let chargedInStore = 0
          for (const account of accounts) {
            const money = yield* moneyOf(account.account_id)
            assert.strictEqual(money.purchases, 4, account.account_id)
            assert.strictEqual(money.purchased, 3 * 10_000 + 75_000)
            assert.strictEqual(money.granted, 60)
            assert.strictEqual(money.reservedGrant + money.reservedBalance, 0)
            assert.strictEqual(
              money.balance + money.grant,
              money.purchased + money.granted - money.chargedGrant - money.chargedBalance,
              `${account.account_id}: ${JSON.stringify(money)}`
            )
            assert.isAtLeast(money.balance, 0)
            assert.isAtLeast(money.grant, 0)
            assert.strictEqual(money.plan, "production")
            chargedInStore += money.chargedGrant + money.chargedBalance
            const read = yield* Effect.forEach(account.checkouts, (checkout) =>
              app.call(`/v1/checkout/${checkout.session_id}`)
            )
            assert.isTrue(read.every((reply) => reply.body.status === "paid"))
          }
          assert.strictEqual(chargedByReplies(replies), chargedInStore)
          const negative = yield* sql`SELECT id FROM accounts WHERE balance_credits < 0 OR grant_credits < 0`
          assert.strictEqual(negative.length, 0)
          const perKey = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM calls
            WHERE idempotency_key IS NOT NULL AND state = 'settled'
            GROUP BY account_id, idempotency_key HAVING COUNT(*) > 1`
          assert.strictEqual(perKey.length, 0, "one settled charge per Idempotency-Key")
        })
    )
  })
})
