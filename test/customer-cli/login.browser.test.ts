import { readFileSync } from "node:fs"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { lastStatus, mailReader, signInWithCode, skipReason, textOf, withBrowser } from "../pages/browser.ts"
import { TestApp, testApp } from "../support/app.ts"
import { freshHome, start, waitFor } from "./run.ts"

describe("svc login by the device flow, approved at /activate in Chromium", () => {
  layer(testApp(operations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect(
      "prints the code and URL; a person signs in and approves there; the CLI saves the token",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const mail = yield* mailReader
          const home = freshHome()
          const login = start(["login"], { baseUrl: app.url, home })
          const [, code] = yield* waitFor(login.stderr, /enter (\S+-\S+)/)
          const [complete] = yield* waitFor(login.stderr, /http\S+\/activate\?\S+/)
          yield* withBrowser(app.url, { ip: "10.75.0.1" }, async (run) => {
            const { page } = run
            await page.goto(complete!)
            await signInWithCode(page, mail, "svc-activate@example.com")
            assert.strictEqual(await page.getByLabel("Code shown by the client").inputValue(), code)
            await page.getByRole("button", { name: "Approve" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/activate"), 200)
            assert.include(await textOf(page), `The client showing ${code} is signed in`)
          })
          const finished = yield* Effect.promise(() => login.done)
          assert.strictEqual(finished.code, 0, finished.stderr)
          assert.include(finished.stdout, "Signed in as svc-activate@example.com")
          const config = JSON.parse(readFileSync(join(home, "svc", "config.json"), "utf8"))
          assert.match(config.management_token, /^svcm_/)
        }),
      90_000
    )
  })
})
