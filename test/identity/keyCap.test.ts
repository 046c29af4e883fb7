import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { csrfToken } from "../../src/surfaces/http/pages/respond.ts"
import { callTool, connect, modes } from "../mcp/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { postgresUrl, storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { post, signIn } from "./support.ts"

const freshIp = ipSequence("10.93")

/** How many keys of `accountId` work. */
const activeKeys = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM api_keys
      WHERE account_id = ${accountId} AND revoked_at IS NULL`
    return Number(rows[0]!.n)
  }).pipe(Effect.orDie)

describe(`at most 100 active keys per account (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect(
      "REST: the 101st is INVALID_INPUT and changes nothing; a rotation still works; a revocation makes room",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { management_token: token, accounts } = yield* signIn(app, "many-keys@example.com", { ip })
          const accountId = accounts[0]!.account_id
          const create = (label: string) => post(app, "/v1/keys", { label }, { key: token, ip })
          let last = ""
          for (let i = 0; i < 100; i++) {
            const created = yield* create(`k${i}`)
            assert.strictEqual(created.status, 201, `key ${i}: ${JSON.stringify(created.body)}`)
            last = created.body.key_id
          }
          const refused = yield* create("one too many")
          assert.strictEqual(refused.status, 400)
          assert.strictEqual(refused.headers.get("content-type"), "application/problem+json")
          assert.strictEqual(refused.body.code, "INVALID_INPUT")
          assert.include(refused.body.message, "100 active keys")
          assert.include(refused.body.message, "/v1/keys/revoke")
          assert.strictEqual(yield* activeKeys(accountId), 100)
          // A rotation replaces a key: the count stays, so it is allowed at the cap.
          const rotated = yield* post(app, "/v1/keys/rotate", { key_id: last }, { key: token, ip })
          assert.strictEqual(rotated.status, 200, JSON.stringify(rotated.body))
          assert.strictEqual(yield* activeKeys(accountId), 100)
          const revoked = yield* post(
            app,
            "/v1/keys/revoke",
            { key_id: rotated.body.key_id },
            { key: token, ip }
          )
          assert.strictEqual(revoked.status, 200)
          assert.strictEqual((yield* create("room again")).status, 201)
          assert.strictEqual((yield* create("full again")).status, 400)
          assert.strictEqual(yield* activeKeys(accountId), 100)
        }),
      120_000
    )

    it.effect("MCP create_key and the dashboard's form meet the same rule", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        const ip = freshIp()
        const { management_token: token, accounts } = yield* signIn(app, "mcp-many-keys@example.com", { ip })
        const accountId = accounts[0]!.account_id
        // 99 keys straight in the store, then one through MCP: 100.
        const now = Date.now()
        for (let i = 0; i < 99; i++)
          yield* sql`INSERT INTO api_keys (id, account_id, secret_hash, hint, label, created_at)
            VALUES (${`key_cap_${i}`}, ${accountId}, ${`cap-hash-${accountId}-${i}`}, 'svc_…', 'bulk', ${now})`
        const client = yield* connect(`${app.url}/mcp`, { key: token, ip }, modes[0])
        const hundredth = yield* callTool(client, "create_key", { label: "via mcp" })
        assert.isFalse(hundredth.isError, hundredth.text)
        const refused = yield* callTool(client, "create_key", { label: "too many" })
        assert.isTrue(refused.isError)
        assert.strictEqual(refused.problem.code, "INVALID_INPUT")
        assert.include(refused.problem.message, "100 active keys")

        const page = yield* app.call("/dashboard/keys", {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            cookie: `svc_session=${token}`
          },
          body: new URLSearchParams({ csrf: csrfToken(token), account: accountId, label: "form" }).toString(),
          ip
        })
        assert.strictEqual(page.status, 400)
        assert.match(page.headers.get("content-type") ?? "", /^text\/html/)
        assert.include(page.body, "100 active keys")
        assert.notInclude(page.body, "Your new key")
        assert.strictEqual(yield* activeKeys(accountId), 100)
      }).pipe(Effect.scoped)
    )

    it.effect.skipIf(postgresUrl === undefined)(
      "PostgreSQL: two creates at once at 99 keys; one is the 100th, the other is refused",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const sql = yield* SqlClient.SqlClient
          for (let round = 0; round < 5; round++) {
            const ip = freshIp()
            const email = `race-keys-${round}@example.com`
            const { management_token: token, accounts } = yield* signIn(app, email, { ip })
            const accountId = accounts[0]!.account_id
            const now = Date.now()
            for (let i = 0; i < 99; i++)
              yield* sql`INSERT INTO api_keys (id, account_id, secret_hash, hint, label, created_at)
                VALUES (${`key_race_${round}_${i}`}, ${accountId}, ${`race-hash-${round}-${i}`}, 'svc_…', 'bulk', ${now})`
            const replies = yield* Effect.all(
              [0, 1].map((i) => post(app, "/v1/keys", { label: `race ${i}` }, { key: token, ip })),
              { concurrency: "unbounded" }
            )
            assert.deepStrictEqual(
              replies.map((reply) => reply.status).sort(),
              [201, 400],
              `round ${round}: ${JSON.stringify(replies.map((reply) => reply.body))}`
            )
            assert.strictEqual(yield* activeKeys(accountId), 100)
          }
        })
    )
  })
})
