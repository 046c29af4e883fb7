import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Admin } from "../../src/operator/Admin.ts"
import { signIn } from "../identity/support.ts"
import { lastStatus, mailReader, signInWithCode, skipReason, textOf, withBrowser } from "../pages/browser.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { checkPage, dashboard } from "./support.ts"

describe(`/dashboard/keys: caps, platforms, delegation and child keys in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 180_000, excludeTestServices: true })((it) => {
    it.effect(
      "create a capped key, see its spend and its child key under it, edit its limits, revoke the child; plain forms, axe at 360 px and desktop",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const admin = yield* Admin
          const mail = yield* mailReader
          const ip = "10.97.0.1"
          const email = "dash-caps@example.com"
          const minted = yield* app.mint(ip)
          yield* signIn(app, email, { key: minted.key, ip })
          yield* Effect.orDie(admin.setPlan(minted.account_id, "flex"))
          const call = (path: string, options: Parameters<typeof app.call>[1]) =>
            Effect.runPromise(app.call(path, { ip, ...options }))

          yield* withBrowser(app.url, { ip }, async (browser) => {
            const { page } = browser
            // The pages work without scripts (the copy button is the only one, and optional).
            await browser.context.route("**/*.js", (route) => route.abort())
            await page.goto(dashboard())
            await signInWithCode(page, mail, email)

            // A refused limit names the fault; nothing is created.
            await page.goto(dashboard("/keys"))
            // The browser's own check (min 1) is lifted so the service's refusal is what answers.
            await page
              .locator('form[action$="/dashboard/keys"]')
              .evaluate((form) => ((form as unknown as { noValidate: boolean }).noValidate = true))
            await page.getByLabel("Spend cap in credits (empty: no cap)").fill("0")
            await page.getByRole("button", { name: "Create key" }).click()
            assert.strictEqual(lastStatus(browser, "POST", "/dashboard/keys"), 400)
            assert.include(await textOf(page), "whole number of credits")

            // A key with a day cap of 500, forum only, that may make child keys.
            await page.getByLabel("Label (optional)").fill("capped")
            await page.getByLabel("Spend cap in credits (empty: no cap)").fill("500")
            await page.getByLabel("Cap period").selectOption("day")
            await page.getByLabel("forum", { exact: true }).check()
            await page.getByLabel("May make child keys for sub-agents (delegate)").check()
            await page.getByRole("button", { name: "Create key" }).click()
            assert.strictEqual(lastStatus(browser, "POST", "/dashboard/keys"), 201)
            const key = (await page.locator("#new-key-secret").textContent()) ?? ""
            assert.match(key, /^svc_\w+$/)

            // It spends 7 credits on forum; profnet is outside its platforms. It makes a child key.
            const spent = await call("/v1/forum/test-echo?value=v&cost=7", {
              key,
              idempotencyKey: "dash-cap-1"
            })
            assert.strictEqual(spent.status, 200, JSON.stringify(spent.body))
            const outside = await call("/v1/profnet/test-echo?value=v&cost=1", {
              key,
              idempotencyKey: "dash-cap-2"
            })
            assert.strictEqual(outside.body.code, "NOT_ENTITLED")
            const child = await call("/v1/keys/child", {
              key,
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ label: "sub-agent", spend_cap_credits: 40 })
            })
            assert.strictEqual(child.status, 201, JSON.stringify(child.body))

            await page.goto(dashboard("/keys"))
            const parentCard = page.locator(".items > li").filter({ hasText: "capped" }).first()
            const parentText = (await parentCard.textContent()) ?? ""
            assert.match(
              parentText,
              /7 of 500 credits spent today \(UTC\); starts afresh \d{4}-\d\d-\d\d 00:00 UTC/
            )
            assert.match(parentText, /May delegate\s*yes/)
            assert.match(parentText, /Platforms\s*forum/)
            const children = page.getByRole("list", { name: /^Child keys of / })
            const childText = (await children.textContent()) ?? ""
            assert.include(childText, "Child key: sub-agent")
            assert.include(childText, "0 of 40 credits spent in total")
            assert.include(childText, child.body.hint)
            assert.include(parentText, "sub-agent", "the child is inside its parent's card")
            await checkPage(page, "keys-capped")

            // Edit: a refused change keeps the page; then a month cap of 800, every platform.
            await parentCard.getByRole("link", { name: /^Edit limits of key / }).click()
            assert.strictEqual(new URL(page.url()).pathname, "/dashboard/keys/edit")
            assert.strictEqual(
              await page.getByLabel("Spend cap in credits (empty: no cap)").inputValue(),
              "500"
            )
            assert.isTrue(await page.getByLabel("forum", { exact: true }).isChecked())
            await checkPage(page, "keys-edit")
            assert.isTrue(await page.getByLabel("May make child keys for sub-agents (delegate)").isChecked())
            await page
              .locator('form[action$="/dashboard/keys/update"]')
              .evaluate((form) => ((form as unknown as { noValidate: boolean }).noValidate = true))
            await page.getByLabel("Spend cap in credits (empty: no cap)").fill("0")
            await page.getByRole("button", { name: "Save limits" }).click()
            assert.strictEqual(lastStatus(browser, "POST", "/dashboard/keys/update"), 400)
            assert.include(await textOf(page), "whole number of credits")
            await page.getByLabel("Spend cap in credits (empty: no cap)").fill("800")
            await page.getByLabel("Cap period").selectOption("month")
            await page.getByLabel("forum", { exact: true }).uncheck()
            await page.getByRole("button", { name: "Save limits" }).click()
            assert.strictEqual(lastStatus(browser, "POST", "/dashboard/keys/update"), 200)
            assert.include(await textOf(page), "limits saved")
            const edited =
              (await page.locator(".items > li").filter({ hasText: "capped" }).first().textContent()) ?? ""
            assert.include(edited, "7 of 800 credits spent this month (UTC)")
            assert.match(edited, /Platforms\s*all of the account's/)
            assert.match(edited, /May delegate\s*yes/)
            const nowProfnet = await call("/v1/profnet/test-echo?value=v&cost=1", {
              key,
              idempotencyKey: "dash-cap-3"
            })
            assert.strictEqual(nowProfnet.status, 200, JSON.stringify(nowProfnet.body))

            // Revoke the child from its parent's card, with the confirmation step.
            await page.getByRole("button", { name: `Revoke child key ${child.body.hint}` }).click()
            assert.include(await textOf(page), "Revoke this key?")
            await page.getByRole("button", { name: "Yes, revoke it" }).click()
            assert.include(await textOf(page), `Key ${child.body.hint} is revoked`)
            assert.include((await children.textContent()) ?? "", "Revoked")
            const gone = await call("/v1/forum/test-echo?value=v&cost=1", {
              key: child.body.key,
              idempotencyKey: "dash-cap-4"
            })
            assert.strictEqual(gone.status, 401)
          })
        })
    )
  })
})
