import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { stormChecks } from "../../bench/storm/checks.ts"
import { AppConfig } from "../../src/config.ts"
import { freshDatabase, storeName } from "../support/database.ts"

const pastMax = "no top-up past its monthly maximum"
const twice = "each paid top-up credited by exactly one purchase, and no unpaid one credited"

describe(`the storm's top-up invariants find what they promise to (${storeName})`, () => {
  layer(freshDatabase.pipe(Layer.provideMerge(AppConfig.layerTest())), { timeout: 60_000 })((it) => {
    it.effect(
      "a month past its maximum and a paid top-up without its one credit fail; the ledger put right passes",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          // The storm's reading of the database, over this test's store.
          const db = {
            query: <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
              Effect.runPromise(sql.unsafe<A>(text, [...params]).pipe(Effect.orDie)),
            close: async () => {}
          }
          const run = (text: string) => Effect.orDie(sql.unsafe(text))
          yield* run(
            `INSERT INTO accounts (id, plan, created_at) VALUES ('acct_a', 'flex', 0), ('acct_b', 'flex', 0)`
          )
          const topup = (id: string, account: string, state: string, at: number, ref: string | null) =>
            run(`INSERT INTO topups (id, account_id, call_id, month, pack, credits, price_usd_cents, monthly_max_usd_cents,
              state, payment_ref, next_attempt_at, created_at)
            VALUES ('${id}', '${account}', 'rcpt_${id}', '2026-11', 'flex', 10000, 2000, 3000, '${state}',
              ${ref === null ? "NULL" : `'${ref}'`}, 0, ${at})`)
          const purchase = (id: string, account: string, ref: string) =>
            run(`INSERT INTO purchases (id, account_id, pack, rail, payment_ref, credits, price_usd_cents, currency, created_at)
            VALUES ('${id}', '${account}', 'flex', 'local', '${ref}', 10000, 2000, 'usd', 0)`)
          // acct_a: two paid top-ups of 2,000 cents under a maximum of 3,000.
          yield* topup("t1", "acct_a", "succeeded", 1, "topup:t1")
          yield* purchase("p1", "acct_a", "topup:t1")
          yield* topup("t2", "acct_a", "succeeded", 2, "topup:t2")
          yield* purchase("p2", "acct_a", "topup:t2")
          // acct_b: a paid top-up never credited, and a failed one that was.
          yield* topup("t3", "acct_b", "succeeded", 3, "topup:t3")
          yield* topup("t4", "acct_b", "failed", 4, "topup:t4")
          yield* purchase("p4", "acct_b", "topup:t4")
          // A top-up's purchase with no top-up behind it.
          yield* purchase("p9", "acct_b", "topup:t9")

          const verdicts = async () =>
            new Map((await stormChecks(db, [])).map((check) => [check.name, check] as const))
          const broken = yield* Effect.promise(verdicts)
          assert.isFalse(broken.get(pastMax)!.pass)
          assert.include(broken.get(pastMax)!.examples.join(" "), "t2")
          assert.isFalse(broken.get(twice)!.pass)
          assert.include(broken.get(twice)!.examples.join(" "), "t3")
          assert.include(broken.get(twice)!.examples.join(" "), "t4")
          assert.include(broken.get(twice)!.examples.join(" "), "p9 (topup:t9) of acct_b: no paid top-up")

          yield* run(`DELETE FROM purchases WHERE id IN ('p2', 'p4', 'p9')`)
          yield* run(`UPDATE topups SET state = 'failed' WHERE id = 't2'`)
          yield* purchase("p3", "acct_b", "topup:t3")
          const right = yield* Effect.promise(verdicts)
          assert.isTrue(right.get(pastMax)!.pass, right.get(pastMax)!.detail)
          assert.isTrue(right.get(twice)!.pass, right.get(twice)!.detail)
        })
    )
  })
})
