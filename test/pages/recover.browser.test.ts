import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { baseUrl, lastStatus, mailReader, skipReason, textOf, withBrowser } from "./browser.ts"

describe(`/recover in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "the same answer for any email; the link shows the account, the button the new key once",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const mail = yield* mailReader
          const ip = "10.75.0.1"
          const minted = yield* app.mint(ip)
          yield* signIn(app, "keeper@example.com", { key: minted.key, ip })

          const newKey = yield* withBrowser(app.url, { ip }, async (run) => {
            const { page } = run
            const answers: Array<string> = []
            for (const email of ["nobody@example.com", "keeper@example.com"]) {
              await page.goto(`${baseUrl}/recover`)
              await page.getByLabel("Email address").fill(email)
              await page.getByRole("button", { name: "Send me a recovery link" }).click()
              assert.strictEqual(lastStatus(run, "POST", "/recover"), 200)
              answers.push(await page.locator("main").innerHTML())
            }
            assert.strictEqual(answers[0], answers[1], "no enumeration")
            assert.include(
              await textOf(page),
              "If this email owns a claimed account, a recovery link is on its way"
            )

            const token = await mail.link("keeper@example.com", "/recover")
            // Opening the link (as a scanner would) changes nothing.
            await page.goto(`${baseUrl}/recover?token=${token}`)
            await page.goto(`${baseUrl}/recover?token=${token}`)
            assert.include(await textOf(page), `This link recovers account ${minted.account_id}`)
            await page.getByRole("button", { name: "Create the new key" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/recover/rekey"), 200)
            const shown = await textOf(page)
            assert.include(shown, "Store this key now: it is shown only once.")
            assert.include(shown, "1 old key was revoked")
            const key = await page.locator("#new-key").textContent()

            // The link is spent: the page and the button say so.
            const dead = await page.goto(`${baseUrl}/recover?token=${token}`)
            assert.strictEqual(dead?.status(), 401)
            assert.include(await textOf(page), "This recovery link is wrong, used or expired")
            assert.notInclude(await textOf(page), key ?? "unreachable")
            assert.deepStrictEqual(run.elsewhere, [])
            return key ?? ""
          })
          assert.match(newKey, /^svc_/)
          assert.strictEqual(
            (yield* app.call("/v1/usage", { key: minted.key, ip })).status,
            401,
            "the old key"
          )
          assert.strictEqual((yield* app.call("/v1/usage", { key: newKey, ip })).status, 200, "the new key")
        }),
      60_000
    )
  })
})
