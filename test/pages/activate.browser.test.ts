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

describe(`/activate in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "signed out: sign in and come back with the user code; approve; the device gets its token",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const mail = yield* mailReader
          const ip = "10.74.0.1"
          const started = yield* post(app, "/v1/auth/device", {}, { ip })
          assert.strictEqual(started.status, 200, JSON.stringify(started.body))
          const userCode: string = started.body.user_code
          assert.strictEqual(started.body.verification_uri, `${baseUrl}/activate`)
          const pending = yield* post(
            app,
            "/v1/auth/device/token",
            { device_code: started.body.device_code },
            { ip }
          )
          assert.strictEqual(pending.body.error, "authorization_pending")
          const polledAt = Date.now()

          yield* withBrowser(app.url, { ip }, async (run) => {
            const { page } = run
            // verification_uri_complete carries the code.
            await page.goto(started.body.verification_uri_complete)
            assert.include(
              await textOf(page),
              `Sign in first to approve the command-line client's code ${userCode}`
            )
            await signInWithCode(page, mail, "device-owner@example.com")
            assert.include(await textOf(page), "Signed in as device-owner@example.com")
            assert.strictEqual(await page.getByLabel("Code shown by the client").inputValue(), userCode)

            // A wrong code is refused in words, the form stays.
            await page.getByLabel("Code shown by the client").fill("BBBB-BBBB")
            await page.getByRole("button", { name: "Approve" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/activate"), 400)
            assert.include(await textOf(page), "No pending sign-in has this code")

            await page.getByLabel("Code shown by the client").fill(userCode.toLowerCase())
            await page.getByRole("button", { name: "Approve" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/activate"), 200)
            assert.include(await textOf(page), `The client showing ${userCode} is signed in`)
            assert.deepStrictEqual(run.elsewhere, [])
          })

          // RFC 8628: the next poll waits `interval` seconds, or it is told to slow down.
          yield* Effect.promise(
            () => new Promise((resolve) => setTimeout(resolve, Math.max(0, polledAt + 5_200 - Date.now())))
          )
          const token = yield* post(
            app,
            "/v1/auth/device/token",
            { device_code: started.body.device_code },
            { ip }
          )
          assert.strictEqual(token.status, 200, JSON.stringify(token.body))
          assert.strictEqual(token.body.email, "device-owner@example.com")
          const tokens = yield* app.call("/v1/auth/tokens", { key: token.body.management_token, ip })
          assert.strictEqual(tokens.status, 200)
        }),
      60_000
    )

    it.effect("signed in: /activate?user_code= is prefilled; Deny refuses the device", (context) =>
      Effect.gen(function* () {
        if (skipReason !== undefined) return context.skip(skipReason)
        const app = yield* TestApp
        const mail = yield* mailReader
        const ip = "10.74.0.2"
        const started = yield* post(app, "/v1/auth/device", {}, { ip })
        yield* withBrowser(app.url, { ip }, async (run) => {
          const { page } = run
          await page.goto(`${baseUrl}/login`)
          await signInWithCode(page, mail, "denier@example.com")
          await page.goto(`${baseUrl}/activate?user_code=${started.body.user_code}`)
          assert.strictEqual(
            await page.getByLabel("Code shown by the client").inputValue(),
            started.body.user_code
          )
          // One primary action: Approve; Deny and Sign out are secondary. The header, like the body,
          // knows the visitor is signed in.
          assert.deepStrictEqual(await page.locator("main button:not(.secondary)").allTextContents(), [
            "Approve"
          ])
          assert.deepStrictEqual(await page.locator("main button.secondary").allTextContents(), [
            "Deny",
            "Sign out"
          ])
          assert.strictEqual(await page.locator("header.site a.cta").textContent(), "Dashboard")
          await page.getByRole("button", { name: "Deny" }).click()
          assert.include(await textOf(page), "was refused")
        })
        const denied = yield* post(
          app,
          "/v1/auth/device/token",
          { device_code: started.body.device_code },
          { ip }
        )
        assert.strictEqual(denied.status, 400)
        assert.strictEqual(denied.body.error, "access_denied")
      })
    )
  })
})
