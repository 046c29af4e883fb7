import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { stormChecks } from "../../bench/storm/checks.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { post, signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const noKeyOverCap =
  "no key over its spend cap in any of its periods (UTC day, month, or in total; its children's spend included)"
const counterRight =
  "each capped key's spend counter = its (and its children's) charges and reservations in the period"

describe(`the storm's key-cap invariant finds what it promises to (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "a child's charge pushing its parent past the cap, and a counter that drifted, fail; the ledger put right passes",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const admin = yield* Admin
          const sql = yield* SqlClient.SqlClient
          const ip = "10.98.0.1"
          const minted = yield* app.mint(ip)
          const owner = yield* signIn(app, "storm-cap@example.com", { key: minted.key, ip })
          yield* Effect.orDie(admin.setPlan(minted.account_id, "flex"))
          const parent = yield* post(
            app,
            "/v1/keys",
            { label: "parent", spend_cap_credits: 10, may_delegate: true },
            { key: owner.management_token, ip }
          )
          assert.strictEqual(parent.status, 201, JSON.stringify(parent.body))
          const child = yield* post(
            app,
            "/v1/keys/child",
            { spend_cap_credits: 5 },
            { key: parent.body.key, ip }
          )
          assert.strictEqual(child.status, 201, JSON.stringify(child.body))
          const echo = (key: string, idempotencyKey: string) =>
            app.call("/v1/profnet/test-echo?value=v&cost=4", { key, ip, idempotencyKey })
          assert.strictEqual((yield* echo(parent.body.key, "storm-cap-1")).status, 200)
          const byChild = yield* echo(child.body.key, "storm-cap-2")
          assert.strictEqual(byChild.status, 200, JSON.stringify(byChild.body))
          const receipt = byChild.headers.get("x-receipt-id")!

          // The storm's reading of the database, over this test's store.
          const db = {
            query: <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
              Effect.runPromise(sql.unsafe<A>(text, [...params]).pipe(Effect.orDie)),
            close: async () => {}
          }
          const run = (text: string, params: ReadonlyArray<unknown> = []) =>
            Effect.orDie(sql.unsafe(text, [...params]))
          const verdict = (name = noKeyOverCap) =>
            Effect.promise(async () => (await stormChecks(db, [])).find((check) => check.name === name)!)

          const right = yield* verdict()
          assert.isTrue(right.pass, right.detail)
          assert.isTrue((yield* verdict(counterRight)).pass)
          // Both keys have a cap: the check reads them (a cap lowered under the spend is seen).
          yield* run("UPDATE api_keys SET spend_cap_credits = 3 WHERE id = $1", [child.body.key_id])
          assert.include(
            (yield* verdict()).examples.join(" | "),
            `${child.body.key_id} total: spent 4 of a cap of 3`
          )
          yield* run("UPDATE api_keys SET spend_cap_credits = 5 WHERE id = $1", [child.body.key_id])

          // The child's charge grown to 7: the child is past its 5, the parent past its 10 (4 + 7).
          yield* run("UPDATE calls SET charged = 7 WHERE id = $1", [receipt])
          const over = yield* verdict()
          assert.isFalse(over.pass)
          const examples = over.examples.join(" | ")
          assert.include(examples, `${parent.body.key_id} total: spent 11 of a cap of 10`)
          assert.include(examples, `${child.body.key_id} total: spent 7 of a cap of 5`)
          yield* run("UPDATE calls SET charged = 4 WHERE id = $1", [receipt])

          // A counter that says less than the charges it counts (the next charge would pass the cap).
          yield* run("UPDATE key_spend SET spent = spent - 3 WHERE key_id = $1", [parent.body.key_id])
          const drifted = yield* verdict(counterRight)
          assert.isFalse(drifted.pass)
          assert.include(drifted.examples.join(" | "), `${parent.body.key_id} total: counter 5, charges 8`)
          yield* run("UPDATE key_spend SET spent = spent + 3 WHERE key_id = $1", [parent.body.key_id])

          const again = yield* verdict()
          assert.isTrue(again.pass, again.detail)
          assert.isTrue((yield* verdict(counterRight)).pass)
        })
    )
  })
})
