import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { post } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import {
  baseUrl,
  lastStatus,
  mailReader,
  signInWithCode,
  skipReason,
  textOf,
  withBrowser
} from "./browser.ts"

describe(`/login?redirect_uri= (loopback callback) in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "sign-in, then 303 to the loopback with code and state; signed in already, one button; the code exchanges once",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const mail = yield* mailReader
          const ip = "10.72.0.1"
          const codes = yield* withBrowser(app.url, { ip }, async (run) => {
            const { page } = run
            const redirectUri = `${run.loopback}/callback`
            const start = (state: string) =>
              `${baseUrl}/login?redirect_uri=${encodeURIComponent(redirectUri)}&state=${encodeURIComponent(state)}`
            await page.goto(start("s1 &x"))
            assert.include(await textOf(page), "A command-line client on this computer asked to sign in")
            await signInWithCode(page, mail, "cli@example.com")
            assert.strictEqual(lastStatus(run, "POST", "/login/code"), 303)
            assert.strictEqual(run.callbacks.length, 1)
            const first = new URL(run.callbacks[0]!)
            assert.strictEqual(first.origin + first.pathname, redirectUri)
            assert.strictEqual(first.searchParams.get("state"), "s1 &x")
            assert.match(first.searchParams.get("code") ?? "", /^[0-9A-Za-z]{43}$/)

            // Signed in by cookie: no sign-in again, a button that confirms.
            await page.goto(start("s2"))
            assert.include(await textOf(page), "asks to sign in as cli@example.com")
            assert.strictEqual(run.callbacks.length, 1, "nothing is sent before the button")
            await page.getByRole("button", { name: "Continue as cli@example.com" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/login/authorize"), 303)
            assert.strictEqual(run.callbacks.length, 2)
            const second = new URL(run.callbacks[1]!)
            assert.strictEqual(second.searchParams.get("state"), "s2")

            // Anything but a loopback address is refused, with the reason.
            for (const uri of [
              "https://evil.example/cb",
              "http://127.0.0.1.evil.example:80/cb",
              "javascript:alert(1)"
            ]) {
              const refused = await page.goto(
                `${baseUrl}/login?redirect_uri=${encodeURIComponent(uri)}&state=x`
              )
              assert.strictEqual(refused?.status(), 400, uri)
              assert.include(await textOf(page), "is not a loopback address")
            }
            assert.deepStrictEqual(run.elsewhere, [])
            return [first.searchParams.get("code")!, second.searchParams.get("code")!]
          })
          for (const code of codes) {
            const exchanged = yield* post(app, "/v1/auth/exchange", { code }, { ip })
            assert.strictEqual(exchanged.status, 200, JSON.stringify(exchanged.body))
            assert.strictEqual(exchanged.body.email, "cli@example.com")
            assert.match(exchanged.body.management_token, /^svcm_/)
            const again = yield* post(app, "/v1/auth/exchange", { code }, { ip })
            assert.strictEqual(again.status, 401, "an exchange code works once")
          }
        }),
      60_000
    )
  })
})
