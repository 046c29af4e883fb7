import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Admin } from "../../src/operator/Admin.ts"
import { post, signIn } from "../identity/support.ts"
import { lastStatus, mailReader, signInWithCode, skipReason, withBrowser } from "../pages/browser.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { checkPage, dashboard } from "./support.ts"

describe(`/dashboard/usage splits spend by key in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 180_000, excludeTestServices: true })((it) => {
    it.effect(
      "credits by key (a child key on its own line, naming its parent) and each receipt's key; passes axe",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const admin = yield* Admin
          const mail = yield* mailReader
          const ip = "10.94.0.1"
          const email = "dash-key-spend@example.com"
          const minted = yield* app.mint(ip)
          const { management_token: token } = yield* signIn(app, email, { key: minted.key, ip: "10.94.0.2" })
          yield* Effect.orDie(admin.setPlan(minted.account_id, "flex"))
          const parent = yield* post(
            app,
            "/v1/keys",
            { label: "orchestrator", spend_cap_credits: 500, cap_period: "month", may_delegate: true },
            { key: token, ip }
          )
          assert.strictEqual(parent.status, 201, JSON.stringify(parent.body))
          const child = yield* post(
            app,
            "/v1/keys/child",
            { label: "researcher", spend_cap_credits: 50 },
            { key: parent.body.key, ip }
          )
          assert.strictEqual(child.status, 201, JSON.stringify(child.body))
          const spend = (key: string, value: string, cost: number) =>
            app.call(`/v1/profnet/test-echo?value=${value}&cost=${cost}`, {
              key,
              ip,
              idempotencyKey: `key-spend-${value}-0001`
            })
          assert.strictEqual((yield* spend(parent.body.key, "p1", 7)).status, 200)
          assert.strictEqual((yield* spend(child.body.key, "c1", 5)).status, 200)
          assert.strictEqual((yield* spend(child.body.key, "c2", 6)).status, 200)
          assert.strictEqual((yield* spend(minted.key, "m1", 2)).status, 200)

          yield* withBrowser(app.url, { ip }, async (browser) => {
            const { page } = browser
            await page.goto(dashboard())
            await signInWithCode(page, mail, email)
            await page.getByRole("link", { name: "Usage" }).first().click()
            assert.strictEqual(lastStatus(browser, "GET", "/dashboard/usage"), 200)
            const table = page.locator("section", { has: page.locator("#per-key") }).locator("tbody tr")
            assert.strictEqual(await table.count(), 3)
            const rows = await table.allInnerTexts()
            // Most spent first: the child's 11, the parent's 7, the first key's 2.
            assert.match(rows[0]!, new RegExp(`researcher.*child of ${parent.body.key_id}\\s+11\\s+2`, "s"))
            assert.match(rows[1]!, /orchestrator.*\s7\s+1/s)
            assert.match(rows[2]!, /\s2\s+1$/s)
            // Each receipt names the key that spent.
            const receiptRows = await page
              .locator("section", { has: page.locator("#receipts") })
              .locator("tbody tr")
              .allInnerTexts()
            assert.strictEqual(receiptRows.length, 4)
            assert.isTrue(
              receiptRows.some(
                (row) => row.includes(child.body.key_id) && row.includes(`child of ${parent.body.key_id}`)
              )
            )
            await checkPage(page, "usage-by-key")
          })
        })
    )
  })
})
