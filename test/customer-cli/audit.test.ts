import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { post, signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { testOperations } from "../support/testOperations.ts"
import { freshHome, svc } from "./run.ts"

describe("svc audit", () => {
  layer(testApp(testOperations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("the account's changes from a shell: a table, pages with --limit and --cursor, JSON", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.96.0.1"
        const minted = yield* app.mint(ip)
        const person = yield* signIn(app, "svc-audit@example.com", { key: minted.key, ip })
        const created = yield* post(app, "/v1/keys", { label: "ci" }, { key: person.management_token, ip })
        assert.strictEqual(created.status, 201)
        const home = freshHome()
        mkdirSync(join(home, "svc"), { recursive: true })
        writeFileSync(
          join(home, "svc", "config.json"),
          JSON.stringify({ key: minted.key, management_token: person.management_token }),
          { mode: 0o600 }
        )
        const env = { baseUrl: app.url, home }

        const shown = yield* svc(["audit"], env)
        assert.strictEqual(shown.code, 0, shown.stderr)
        const rows = shown.stdout.trim().split("\n")
        assert.match(rows[0]!, /^at\s+action\s+by\s+target\s+ip$/)
        assert.match(rows[1]!, /key\.created\s+email svc-audit@example\.com\s+key_\w+\s+10\.96\.0\.1$/)
        assert.match(rows[2]!, /signed_in\s+email svc-audit@example\.com\s+mtok_\w+\s+10\.96\.0\.1$/)
        assert.notInclude(shown.stdout, created.body.key)

        const first = yield* svc(["audit", "--limit", "1", "--json"], env)
        assert.strictEqual(first.code, 0, first.stderr)
        const page = JSON.parse(first.stdout)
        assert.deepStrictEqual(
          page.events.map((event: { action: string }) => event.action),
          ["key.created"]
        )
        assert.isString(page.next_cursor)
        const older = yield* svc(["audit", "--limit", "1", "--cursor", page.next_cursor, "--json"], env)
        assert.deepStrictEqual(
          JSON.parse(older.stdout).events.map((event: { action: string }) => event.action),
          ["signed_in"]
        )
        const human = yield* svc(["audit", "--limit", "1"], env)
        assert.include(human.stdout, `svc audit --cursor ${page.next_cursor}`)

        // The contract's own schema refuses it before any request.
        const refused = yield* svc(["audit", "--limit", "0"], env)
        assert.notStrictEqual(refused.code, 0)
        assert.include(refused.stderr, "between 1 and 100")
        const unknown = yield* svc(["audit", "--cursor", "aud_"], env)
        assert.strictEqual(unknown.code, 2, unknown.stderr)
        assert.include(unknown.stderr, "INVALID_INPUT")
      })
    )
  })
})
