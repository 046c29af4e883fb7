import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { buy } from "../billing/support.ts"
import { signIn, spend } from "../identity/support.ts"
import { lastStatus, mailReader, signInWithCode, skipReason, textOf, withBrowser } from "../pages/browser.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { startReceiver, verified } from "../support/webhookReceiver.ts"
import { checkPage, dashboard, htmlOf } from "./support.ts"

const receiver = await startReceiver()
afterAll(() => receiver.close())

/** Runs a test step from the browser's side (plain promises), with the test's database. */
const runner = Effect.map(
  SqlClient.SqlClient,
  (sql) =>
    <A>(effect: Effect.Effect<A, never, SqlClient.SqlClient>) =>
      Effect.runPromise(Effect.provideService(effect, SqlClient.SqlClient, sql))
)

const waitUntil = async (predicate: () => boolean | Promise<boolean>, what: string) => {
  for (let n = 0; n < 300; n++) {
    if (await predicate()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe(`/dashboard webhooks and automatic top-up in Chromium (${storeName})`, () => {
  layer(testApp(testOperations, { webhookAllowPrivateUrls: true }), {
    timeout: 180_000,
    excludeTestServices: true
  })((it) => {
    it.effect(
      "add a webhook (its secret once), see its deliveries, test and delete it; arm, watch and stop automatic top-up; plain forms, every page passes axe at 360 px and desktop",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const run = yield* runner
          const mail = yield* mailReader
          const ip = "10.94.0.1"
          const email = "dash-hooks@example.com"
          const minted = yield* app.mint(ip)
          yield* signIn(app, email, { key: minted.key, ip })
          yield* buy(app, "flex", { key: minted.key, ip })
          yield* withBrowser(app.url, { ip }, async (browser) => {
            const { page } = browser
            // The pages work without scripts (the copy button is the only one, and optional).
            await browser.context.route("**/*.js", (route) => route.abort())
            await page.goto(dashboard())
            await signInWithCode(page, mail, email)
            await page.goto(dashboard("/webhooks"))
            assert.include(await textOf(page), "No webhook yet")
            await checkPage(page, "webhooks-empty")

            // A refused URL names the fault and keeps what was typed.
            await page.getByLabel("URL (https)").fill(receiver.url("/dash"))
            await page.getByRole("button", { name: "Add webhook" }).click()
            assert.strictEqual(lastStatus(browser, "POST", "/dashboard/webhooks"), 400)
            assert.include(await textOf(page), "Name at least one event")
            assert.strictEqual(await page.getByLabel("URL (https)").inputValue(), receiver.url("/dash"))

            await page.getByLabel(/^key\.created/).check()
            await page.getByLabel(/^credits\.purchased/).check()
            await page.getByLabel(/^topup\.succeeded/).check()
            await page.getByRole("button", { name: "Add webhook" }).click()
            assert.strictEqual(lastStatus(browser, "POST", "/dashboard/webhooks"), 201)
            const secret = (await page.locator("#new-webhook-secret").textContent()) ?? ""
            assert.match(secret, /^whsec_/)
            assert.include(await textOf(page), "only time it is shown")
            await checkPage(page, "webhooks-created")
            await page.goto(dashboard("/webhooks"))
            assert.notInclude(await htmlOf(page), secret, "shown once")
            assert.include(await textOf(page), "credits.purchased, key.created, topup.succeeded")

            // An event, delivered and listed on the deliveries page.
            await page.goto(dashboard("/keys"))
            await page.getByRole("button", { name: "Create key" }).click()
            await waitUntil(() => receiver.received.some((r) => r.path === "/dash"), "key.created")
            const event = verified(secret, receiver.received.find((r) => r.path === "/dash")!)
            assert.strictEqual(event.type, "key.created")
            await page.goto(dashboard("/webhooks"))
            await page.getByRole("link", { name: "Deliveries" }).click()
            await waitUntil(async () => {
              await page.reload()
              return (await textOf(page)).includes("succeeded (200)")
            }, "the attempt on the page")
            assert.include(await textOf(page), "key.created")
            await checkPage(page, "webhooks-deliveries")

            // A test ping.
            await page.goto(dashboard("/webhooks"))
            await page.getByRole("button", { name: /^Send a test to / }).click()
            assert.include(await textOf(page), "A ping")
            await waitUntil(
              () => receiver.received.some((r) => r.path === "/dash" && verified(secret, r).type === "ping"),
              "the ping"
            )

            // Automatic top-up on the billing page: the grant and a pack (20,000); the line just below.
            await page.goto(dashboard("/billing"))
            assert.include(await textOf(page), "Automatic top-up")
            await page.getByLabel("Top up below (credits)").fill("19995")
            await page.getByLabel("At most a month (USD)").fill("40")
            await page.getByRole("button", { name: "Turn on automatic top-up" }).click()
            assert.include(
              await textOf(page),
              "Automatic top-up is on: below 19,995 credits, at most $40.00 a month"
            )
            await checkPage(page, "billing-topup")
            const charged = await run(spend(app, minted.key, ip, 10))
            assert.strictEqual(charged.status, 200, JSON.stringify(charged.body))
            await waitUntil(async () => {
              await page.goto(dashboard("/billing"))
              return (await textOf(page)).includes(": succeeded on local")
            }, "the top-up on the page")
            assert.include(await textOf(page), "$20.00 of top-ups")
            await waitUntil(
              () =>
                receiver.received.some(
                  (r) => r.path === "/dash" && verified(secret, r).type === "topup.succeeded"
                ),
              "topup.succeeded"
            )
            await page.getByRole("button", { name: "Turn off automatic top-up" }).click()
            assert.include(await textOf(page), "Automatic top-up is off.")

            // Delete.
            await page.goto(dashboard("/webhooks"))
            await page.getByRole("button", { name: /^Delete the webhook / }).click()
            assert.include(await textOf(page), "The webhook is deleted")
            assert.include(await textOf(page), "No webhook yet")
          })
        })
    )
  })
})
