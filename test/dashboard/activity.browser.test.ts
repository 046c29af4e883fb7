import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { post, signIn } from "../identity/support.ts"
import { lastStatus, mailReader, signInWithCode, skipReason, textOf, withBrowser } from "../pages/browser.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { checkPage, dashboard } from "./support.ts"

describe(`/dashboard/activity in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 180_000, excludeTestServices: true })((it) => {
    it.effect(
      "the audit log as a page: who changed what and from where, newest first, 50 a page, no script; passes axe at 360 px and desktop",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const mail = yield* mailReader
          const ip = "10.93.0.1"
          const email = "dash-activity@example.com"
          const minted = yield* app.mint(ip)
          const { management_token: token } = yield* signIn(app, email, { key: minted.key, ip: "10.93.0.2" })
          // With the mint's key and the two sign-ins, 58 changes: two pages.
          for (let n = 1; n <= 55; n++) {
            const set = yield* post(app, "/v1/alert", { threshold: n }, { key: token, ip: "10.93.0.2" })
            assert.strictEqual(set.status, 200)
          }
          yield* withBrowser(app.url, { ip }, async (browser) => {
            const { page } = browser
            // The page has no script at all.
            await browser.context.route("**/*.js", (route) => route.abort())
            await page.goto(dashboard())
            await signInWithCode(page, mail, email)
            await page.getByRole("link", { name: "Activity" }).click()
            assert.strictEqual(lastStatus(browser, "GET", "/dashboard/activity"), 200)
            const rows = page.locator("tbody tr")
            assert.strictEqual(await rows.count(), 50)
            assert.match(
              (await rows.nth(0).textContent()) ?? "",
              /Signed in.*dash-activity@example\.com.*mtok_\w+.*10\.93\.0\.1/
            )
            assert.match(
              (await rows.nth(1).textContent()) ?? "",
              /Balance alert set.*dash-activity@example\.com.*55.*10\.93\.0\.2/
            )
            await checkPage(page, "activity")

            await page.getByRole("link", { name: "Older changes" }).click()
            assert.strictEqual(await rows.count(), 8)
            assert.match((await rows.nth(6).textContent()) ?? "", /Signed in.*10\.93\.0\.2/)
            assert.match(
              (await rows.last().textContent()) ?? "",
              /Key created.*the service.*key_\w+.*10\.93\.0\.1/
            )
            assert.strictEqual(await page.getByRole("link", { name: "Older changes" }).count(), 0)
            await page.getByRole("link", { name: "Newest" }).click()
            assert.strictEqual(await rows.count(), 50)

            // A change made on another page is at the top, by this sign-in, from this browser's address.
            await page.goto(dashboard("/keys"))
            await page.getByRole("button", { name: "Create key" }).click()
            const secret = (await page.locator("#new-key-secret").textContent()) ?? ""
            assert.match(secret, /^svc_/)
            await page.getByRole("link", { name: "Activity" }).click()
            assert.match(
              (await rows.nth(0).textContent()) ?? "",
              /Key created.*dash-activity@example\.com.*key_\w+.*10\.93\.0\.1/
            )
            assert.notInclude(await page.content(), secret)

            // A cursor the log never gave: the newest page, saying so.
            await page.goto(`${dashboard("/activity")}?cursor=nonsense`)
            assert.strictEqual(lastStatus(browser, "GET", "/dashboard/activity"), 400)
            assert.include(await textOf(page), "That page of the activity does not exist")
            assert.strictEqual(await rows.count(), 50)
          })
        })
    )
  })
})
