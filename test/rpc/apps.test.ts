import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { runCli } from "./cli.ts"

describe(`admin apps (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("lists an account's connected apps; an unknown account is AccountNotFound", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        const env = { SVC_BASE_URL: app.url, SVC_ADMIN_TOKEN: "test-admin-token-7f3a9c2e5b8d1f4a6c" }
        const { account_id } = yield* app.mint("10.46.0.1")
        const empty = yield* runCli(["admin", "apps", "--account", account_id], env)
        assert.strictEqual(empty.code, 0, empty.stderr)
        assert.deepStrictEqual(JSON.parse(empty.stdout), { account_id, apps: [] })

        yield* sql`INSERT INTO oauth_apps (id, account_id, client_id, client_name, redirect_host, mounts, grant_id, created_at)
          VALUES ('app_admintest', ${account_id}, 'client_admintest', 'Operator Agent', '127.0.0.1:4711', '/mcp/forum',
            'grant_admintest', ${Date.UTC(2026, 10, 23)})`.pipe(Effect.orDie)
        const listed = yield* runCli(["admin", "apps", "--account", account_id], env)
        assert.strictEqual(listed.code, 0, listed.stderr)
        const body = JSON.parse(listed.stdout)
        assert.strictEqual(body.apps.length, 1)
        assert.strictEqual(body.apps[0].app_id, "app_admintest")
        assert.strictEqual(body.apps[0].client_name, "Operator Agent")
        assert.deepStrictEqual(body.apps[0].mounts, ["/mcp/forum"])

        const unknown = yield* runCli(["admin", "apps", "--account", "acct_nope"], env)
        assert.strictEqual(unknown.code, 1)
        assert.include(unknown.stderr, "AccountNotFound")
      })
    )
  })
})
