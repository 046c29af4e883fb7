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
  signInWithCode,
  skipReason,
  textOf,
  withBrowser
} from "./browser.ts"

describe(`/login in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "email, wrong code, right code: an HttpOnly Lax cookie, the accounts, and sign-out revokes it",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const mail = yield* mailReader
          const ip = "10.71.0.1"
          const token = yield* withBrowser(app.url, { ip }, async (run) => {
            const { page } = run
            const response = await page.goto(`${baseUrl}/login`)
            assert.strictEqual(response?.status(), 200)
            const csp = response?.headers()["content-security-policy"] ?? ""
            assert.include(csp, "form-action 'self';")
            assert.include(csp, "default-src 'none'")

            await page.getByLabel("Email address").fill("not an email")
            // The browser's own check would stop the form; the server's is what counts here.
            await page.locator("form").evaluate((form) => form.setAttribute("novalidate", ""))
            await page.getByRole("button", { name: "Send me a code" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/login"), 400)
            assert.include(await textOf(page), "That is not an email address")

            await page.getByLabel("Email address").fill("Reader@Example.com")
            await page.getByRole("button", { name: "Send me a code" }).click()
            assert.include(await textOf(page), "We sent a 6-digit code to reader@example.com")
            const code = await mail.code("reader@example.com")
            await page.getByLabel("6-digit code").fill(code === "000000" ? "111111" : "000000")
            await page.getByRole("button", { name: "Sign in" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/login/code"), 401)
            assert.include(await textOf(page), "That code is wrong, used or expired")
            assert.isUndefined(await sessionCookieOf(run.context))

            await page.getByLabel("6-digit code").fill(code)
            await page.getByRole("button", { name: "Sign in" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/login/code"), 200)
            const signedIn = await textOf(page)
            assert.include(signedIn, "You are signed in as reader@example.com")
            assert.match(signedIn, /acct_\w+/)
            const cookie = await sessionCookieOf(run.context)
            assert.isDefined(cookie)
            assert.isTrue(cookie!.httpOnly)
            assert.strictEqual(cookie!.sameSite, "Lax")
            assert.strictEqual(cookie!.path, "/")
            assert.isFalse(cookie!.secure, "http base URL: not Secure")
            const days = (cookie!.expires - Date.now() / 1000) / 86_400
            assert.isTrue(days > 89.9 && days <= 90, `expires in ${days} days`)
            assert.match(cookie!.value, /^svcm_/)

            // The cookie signs the browser in on the next visit.
            await page.goto(`${baseUrl}/login`)
            assert.include(await textOf(page), "You are signed in as reader@example.com")

            // A sign-out whose CSRF field is not the session's is refused.
            await page
              .locator("input[name=csrf]")
              .first()
              .evaluate((input) => input.setAttribute("value", "forged"))
            await page.getByRole("button", { name: "Sign out" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/logout"), 403)
            assert.include(await textOf(page), "This form does not belong to your current sign-in")

            await page.goto(`${baseUrl}/login`)
            await page.getByRole("button", { name: "Sign out" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/logout"), 200)
            assert.include(await textOf(page), "You are signed out")
            assert.isUndefined(await sessionCookieOf(run.context))
            assert.deepStrictEqual(run.elsewhere, [])
            return cookie!.value
          })
          const after = yield* app.call("/v1/auth/tokens", { key: token, ip })
          assert.strictEqual(after.status, 401, "the signed-out token is revoked")
        }),
      60_000
    )

    it.effect("the emailed link asks before it signs in (a prefetch signs no one in)", (context) =>
      Effect.gen(function* () {
        if (skipReason !== undefined) return context.skip(skipReason)
        const app = yield* TestApp
        const mail = yield* mailReader
        const ip = "10.71.0.2"
        yield* withBrowser(app.url, { ip }, async (run) => {
          const { page } = run
          await page.goto(`${baseUrl}/login`)
          await page.getByLabel("Email address").fill("linker@example.com")
          await page.getByRole("button", { name: "Send me a code" }).click()
          const token = await mail.link("linker@example.com", "/login")
          // A scanner's GET, twice: nothing happens.
          for (let i = 0; i < 2; i++) {
            const response = await page.goto(`${baseUrl}/login?token=${token}`)
            assert.strictEqual(response?.status(), 200)
            const text = await textOf(page)
            assert.include(text, "This link signs you in as linker@example.com in this browser.")
            assert.notInclude(text, "This browser is signed in as")
            assert.isUndefined(await sessionCookieOf(run.context))
          }
          await page.getByRole("button", { name: "Sign in as linker@example.com" }).click()
          assert.include(await textOf(page), "You are signed in as linker@example.com")
          assert.isDefined(await sessionCookieOf(run.context))
          // Someone else's link, for their own address, opened in this signed-in browser: the page
          // names both addresses before anything changes.
          const theirs = await fetch(`${app.url}/v1/auth/email/start`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-forwarded-for": "10.71.0.3" },
            body: JSON.stringify({ email: "link-sender@example.com" })
          })
          assert.strictEqual(theirs.status, 202)
          await page.goto(`${baseUrl}/login?token=${await mail.link("link-sender@example.com", "/login")}`)
          const warned = await textOf(page)
          assert.include(warned, "This link signs you in as link-sender@example.com in this browser.")
          assert.include(
            warned,
            "This browser is signed in as linker@example.com. Continuing signs linker@example.com out here"
          )
          // Used: the link works once, and its page says so before any button.
          await run.context.clearCookies()
          const used = await page.goto(`${baseUrl}/login?token=${token}`)
          assert.strictEqual(used?.status(), 401)
          assert.include(await textOf(page), "This sign-in link is wrong, used or expired")
        })
      })
    )

    it.effect("too many starts: 429 with the wait, in words", (context) =>
      Effect.gen(function* () {
        if (skipReason !== undefined) return context.skip(skipReason)
        const app = yield* TestApp
        const mail = yield* mailReader
        const ip = "10.71.0.3"
        yield* withBrowser(app.url, { ip }, async (run) => {
          const { page } = run
          for (let i = 0; i < 3; i++) {
            await page.goto(`${baseUrl}/login`)
            await page.getByLabel("Email address").fill("busy@example.com")
            await page.getByRole("button", { name: "Send me a code" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/login"), 200)
          }
          await page.goto(`${baseUrl}/login`)
          await page.getByLabel("Email address").fill("busy@example.com")
          await page.getByRole("button", { name: "Send me a code" }).click()
          assert.strictEqual(lastStatus(run, "POST", "/login"), 429)
          assert.match(await textOf(page), /Too many attempts .* Try again in \d+ (seconds|minutes)\./)
          assert.strictEqual(await page.getByLabel("Email address").inputValue(), "busy@example.com")
          // Another address still works, and signs in.
          await page.goto(`${baseUrl}/login`)
          await signInWithCode(page, mail, "calm@example.com")
          assert.include(await textOf(page), "You are signed in as calm@example.com")
        })
      })
    )
  })
})
