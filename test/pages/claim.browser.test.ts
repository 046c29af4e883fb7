import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import {
  baseUrl,
  lastStatus,
  mailReader,
  sessionCookieOf,
  skipReason,
  textOf,
  withBrowser
} from "./browser.ts"

describe(`/claim in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "a minted key and an email: code, the account claimed and the 10,000-credit grant",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const mail = yield* mailReader
          const ip = "10.73.0.1"
          const minted = yield* app.mint(ip)
          const replaced = yield* withBrowser(app.url, { ip }, async (run) => {
            const { page } = run
            const response = await page.goto(`${baseUrl}/claim?account=${minted.account_id}`)
            assert.strictEqual(response?.status(), 200)
            const intro = await textOf(page)
            assert.include(intro, `For account ${minted.account_id}.`)
            assert.include(intro, "a one-time grant of 10,000 credits")

            // Not a key of this service, then a well-formed key that does not exist.
            await page.getByLabel("Your trial key").fill("sk-live-123")
            await page.getByLabel("Email address").fill("claimer@example.com")
            await page.getByRole("button", { name: "Send me a code" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/claim"), 400)
            assert.include(await textOf(page), "This is not a credential of this service")
            assert.strictEqual(await page.getByLabel("Email address").inputValue(), "claimer@example.com")
            await page.getByLabel("Your trial key").fill(`svc_trial_${"A".repeat(32)}`)
            await page.getByRole("button", { name: "Send me a code" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/claim"), 401)
            assert.include(await textOf(page), "This key is not active")

            await page.getByLabel("Your trial key").fill(minted.key)
            await page.getByRole("button", { name: "Send me a code" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/claim"), 200)
            assert.include(await textOf(page), "We sent a 6-digit code to claimer@example.com")
            await page.getByLabel("6-digit code").fill(await mail.code("claimer@example.com"))
            await page.getByRole("button", { name: "Sign in" }).click()
            const done = await textOf(page)
            assert.include(done, `Account ${minted.account_id} is now claimed by your email.`)
            assert.include(done, "one-time grant of 10,000 credits")
            assert.include(done, "You are signed in as claimer@example.com")

            const first = (await sessionCookieOf(run.context))?.value

            // Again with the same key: already ours, no second grant; by another email: not claimed.
            for (const [email, outcome] of [
              ["claimer@example.com", `Account ${minted.account_id} was already claimed by your email.`],
              [
                "someone-else@example.com",
                `Account ${minted.account_id} was not claimed: another email owns it`
              ]
            ] as const) {
              await page.goto(`${baseUrl}/claim`)
              await page.getByLabel("Your trial key").fill(minted.key)
              await page.getByLabel("Email address").fill(email)
              await page.getByRole("button", { name: "Send me a code" }).click()
              await page.getByLabel("6-digit code").fill(await mail.code(email))
              await page.getByRole("button", { name: "Sign in" }).click()
              const text = await textOf(page)
              assert.include(text, outcome)
              assert.notInclude(text, "one-time grant of")
            }
            assert.deepStrictEqual(run.elsewhere, [])
            return first ?? ""
          })
          const old = yield* app.call("/v1/auth/tokens", { key: replaced, ip })
          assert.strictEqual(old.status, 401, "a sign-in that replaces the cookie revokes its token")
          const usage = yield* app.call("/v1/usage", { key: minted.key, ip })
          assert.strictEqual(usage.status, 200, "the same key keeps working")
        }),
      60_000
    )
  })
})
