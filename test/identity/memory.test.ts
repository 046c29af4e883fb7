import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { identityPolicy } from "../../src/domain/signIn.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { TestApp, testApp } from "../support/app.ts"
import { realPause } from "../support/clock.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

/** Asks `/v1/usage` with the key until it answers `status`, in real time; the statuses seen. */
const untilStatus = (key: string, ip: string, status: number, ms: number) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const seen: Array<number> = []
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      const answer = yield* app.call("/v1/usage", { key, ip })
      seen.push(answer.status)
      if (answer.status === status) return seen
      yield* realPause(20)
    }
    return seen
  })

describe(`spend keys from memory (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "a key is read from memory; a change committed by anyone forgets it; an unreported change lasts at most the bound",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const sql = yield* SqlClient.SqlClient
          const ip = "10.66.0.1"

          // Remembered: a revocation the database does not report is not seen (the key is served
          // from memory), until the bound on staleness passes.
          const quiet = yield* app.mint("10.66.0.1")
          assert.strictEqual((yield* app.call("/v1/usage", { key: quiet.key, ip })).status, 200)
          yield* Effect.orDie(sql`ALTER TABLE api_keys DISABLE TRIGGER api_keys_identity`)
          yield* Effect.orDie(sql`UPDATE api_keys SET revoked_at = 1 WHERE account_id = ${quiet.account_id}`)
          yield* Effect.orDie(sql`ALTER TABLE api_keys ENABLE TRIGGER api_keys_identity`)
          const started = Date.now()
          assert.strictEqual((yield* app.call("/v1/usage", { key: quiet.key, ip })).status, 200)

          // Reported: a revocation written straight into the database (no service of this instance
          // knew) is refused as soon as its notification arrives.
          const told = yield* app.mint("10.66.0.2")
          assert.strictEqual((yield* app.call("/v1/usage", { key: told.key, ip })).status, 200)
          yield* Effect.orDie(sql`UPDATE api_keys SET revoked_at = 1 WHERE account_id = ${told.account_id}`)
          const seen = yield* untilStatus(told.key, ip, 401, 3_000)
          assert.strictEqual(seen.at(-1), 401, `statuses: ${seen.join(", ")}`)

          // The same for the account: suspension and a plan change.
          const suspended = yield* app.mint("10.66.0.3")
          assert.strictEqual((yield* app.call("/v1/usage", { key: suspended.key, ip })).status, 200)
          yield* Effect.orDie(sql`UPDATE accounts SET state = 'suspended' WHERE id = ${suspended.account_id}`)
          assert.strictEqual((yield* untilStatus(suspended.key, ip, 401, 3_000)).at(-1), 401)
          const upgraded = yield* app.mint("10.66.0.4")
          assert.strictEqual((yield* app.call("/v1/usage", { key: upgraded.key, ip })).body.plan, "trial")
          yield* Effect.orDie(sql`UPDATE accounts SET plan = 'flex' WHERE id = ${upgraded.account_id}`)
          let plan = "trial"
          for (let attempt = 0; attempt < 150 && plan !== "flex"; attempt++) {
            plan = (yield* app.call("/v1/usage", { key: upgraded.key, ip })).body.plan
            if (plan !== "flex") yield* realPause(20)
          }
          assert.strictEqual(plan, "flex")

          // The unreported revocation ends with the bound.
          yield* realPause(Math.max(0, identityPolicy.keyMemoryMs + 100 - (Date.now() - started)))
          assert.strictEqual((yield* app.call("/v1/usage", { key: quiet.key, ip })).status, 401)
        })
    )

    it.effect("this instance's own revocation is refused at the very next request", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        for (let round = 0; round < 10; round++) {
          const ip = `10.66.1.${round}`
          const minted = yield* app.mint(ip)
          assert.strictEqual((yield* app.call("/v1/usage", { key: minted.key, ip })).status, 200)
          // The operator suspends the account through this instance (its notification comes later).
          const suspended = yield* Effect.orDie(admin.setState(minted.account_id, "suspended"))
          assert.strictEqual(suspended?.state, "suspended")
          assert.strictEqual((yield* app.call("/v1/usage", { key: minted.key, ip })).status, 401)
        }
      })
    )
  })
})
