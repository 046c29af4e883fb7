import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { post, signIn } from "./support.ts"

describe(`a suspended account's owner (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "sees its keys but changes nothing: key, alert and portal changes are UNAUTHORIZED, no grant",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const sql = yield* SqlClient.SqlClient
          const ip = "10.64.0.1"
          const signedIn = yield* signIn(app, "suspended@example.com", { ip })
          const token = signedIn.management_token
          const accountId = signedIn.accounts[0]!.account_id
          yield* sql`UPDATE accounts SET state = 'suspended' WHERE id = ${accountId}`.pipe(Effect.orDie)

          const listed = yield* app.call("/v1/keys", { key: token, ip })
          assert.strictEqual(listed.status, 200)
          for (const [path, body] of [
            ["/v1/keys", { label: "x" }],
            ["/v1/keys/rotate", { key_id: "key_x" }],
            ["/v1/keys/revoke", { key_id: "key_x" }],
            ["/v1/alert", { threshold: 10 }],
            ["/v1/portal", {}]
          ] as const) {
            const refused = yield* post(app, path, body, { key: token, ip })
            assert.strictEqual(refused.status, 401, path)
            assert.strictEqual(refused.body.code, "UNAUTHORIZED", path)
            assert.include(refused.body.message, "suspended", path)
          }
          const rows = yield* sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM api_keys WHERE account_id = ${accountId}`.pipe(Effect.orDie)
          assert.strictEqual(Number(rows[0]!.n), 0)
          const grants = yield* sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM grants WHERE account_id = ${accountId}`.pipe(Effect.orDie)
          assert.strictEqual(Number(grants[0]!.n), 0)
        })
    )
  })
})
