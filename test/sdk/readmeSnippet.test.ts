import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { pinnedNode } from "../customer-cli/run.ts"
import { spend } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { testOperations } from "../support/testOperations.ts"

const root = join(import.meta.dirname, "..", "..")

/** The README's verification snippet: the first `js` block of its "Verifiable receipts" section. */
const snippet = () => {
  const readme = readFileSync(join(root, "README.md"), "utf8")
  const section = readme.slice(readme.indexOf("\n## Verifiable receipts\n"))
  const found = /```js\n([\s\S]*?)```/.exec(section)
  if (found === null) throw new Error("no js block in the README's Verifiable receipts section")
  return found[1]!
}

describe("the README's receipt verification snippet", () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("runs as written and says every receipt is valid", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.97.0.1"
        const minted = yield* app.mint(ip)
        for (const cost of [1, 2]) assert.strictEqual((yield* spend(app, minted.key, ip, cost)).status, 200)
        const run = yield* Effect.promise(
          () =>
            new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
              execFile(
                pinnedNode,
                ["--input-type=module", "-e", snippet()],
                {
                  cwd: root,
                  env: { PATH: process.env.PATH ?? "", SVC_BASE_URL: app.url, SVC_KEY: minted.key }
                },
                (error, stdout, stderr) => resolve({ code: error === null ? 0 : 1, stdout, stderr })
              )
            )
        )
        assert.strictEqual(run.code, 0, run.stderr)
        const lines = run.stdout.trim().split("\n")
        assert.strictEqual(lines.length, 2, run.stdout)
        for (const line of lines) assert.match(line, /^rcpt_\S+ \{ valid: true, kid: '[\w-]+' \}$/)
      })
    )
  })
})
