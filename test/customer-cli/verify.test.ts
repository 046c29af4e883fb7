import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { dayOf, dayToIso } from "../../src/domain/time.ts"
import { spend } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { testOperations } from "../support/testOperations.ts"
import { freshHome, svc } from "./run.ts"

describe("svc receipts verify", () => {
  layer(testApp(testOperations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("verifies a receipt by id, a JSON Lines export online and offline; names every forgery", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.96.0.1"
        const minted = yield* app.mint(ip)
        for (const cost of [1, 2, 3])
          assert.strictEqual((yield* spend(app, minted.key, ip, cost)).status, 200)
        const home = freshHome()
        mkdirSync(join(home, "svc"), { recursive: true })
        writeFileSync(join(home, "svc", "config.json"), JSON.stringify({ key: minted.key }), { mode: 0o600 })
        const env = { baseUrl: app.url, home }

        const today = dayToIso(dayOf(Date.now()))
        const exported = yield* svc(
          ["receipts", "export", "--from", today, "--to", today, "--format", "jsonl"],
          env
        )
        assert.strictEqual(exported.code, 0, exported.stderr)
        const lines = exported.stdout.trim().split("\n")
        const receipts = lines.map((line) => JSON.parse(line))
        assert.strictEqual(receipts.length, 3)

        const byId = yield* svc(["receipts", "verify", receipts[0].id], env)
        assert.strictEqual(byId.code, 0, byId.stderr)
        assert.include(byId.stdout, `verified  ${receipts[0].id}`)

        const file = join(home, "receipts.jsonl")
        writeFileSync(file, exported.stdout)
        const online = yield* svc(["receipts", "verify", file], env)
        assert.strictEqual(online.code, 0, online.stderr)
        assert.strictEqual(online.stdout.match(/^verified {2}rcpt_/gm)?.length, 3)

        // Offline: the key set from a file, and no service at all.
        const jwks = join(home, "jwks.json")
        writeFileSync(jwks, (yield* app.call("/.well-known/jwks.json")).text)
        const offline = yield* svc(["receipts", "verify", file, "--jwks", jwks], {
          baseUrl: "http://127.0.0.1:9",
          home
        })
        assert.strictEqual(offline.code, 0, offline.stderr)

        // Two forgeries among three: both named, the exit code non-zero.
        const forged = [
          JSON.stringify({ ...receipts[0], charged: receipts[0].charged + 1 }),
          lines[1],
          JSON.stringify({ ...receipts[2], signature: undefined })
        ].join("\n")
        writeFileSync(file, `${forged}\n`)
        const failed = yield* svc(["receipts", "verify", file, "--jwks", jwks], env)
        assert.strictEqual(failed.code, 1, failed.stderr)
        assert.include(
          failed.stderr,
          `2 of 3 receipts do not verify: ${receipts[0].id} (altered), ${receipts[2].id} (unsigned)`
        )

        const asJson = yield* svc(["receipts", "verify", file, "--jwks", jwks, "--json"], env)
        assert.strictEqual(asJson.code, 1)
        const results = JSON.parse(asJson.stdout) as ReadonlyArray<{ id: string; valid: boolean }>
        assert.deepStrictEqual(
          results.map((result) => [result.id, result.valid]),
          [
            [receipts[0].id, false],
            [receipts[1].id, true],
            [receipts[2].id, false]
          ]
        )
      })
    )
  })
})
