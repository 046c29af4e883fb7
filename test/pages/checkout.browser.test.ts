import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { post, signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { baseUrl, lastStatus, skipReason, textOf, withBrowser } from "./browser.ts"

/** The little of the DOM these checks read (the tests compile without the DOM library). */
interface Dom {
  readonly document: {
    readonly documentElement: { readonly scrollWidth: number }
    readonly querySelector: (selector: string) => unknown
  }
  readonly innerWidth: number
}

const phone = { width: 375, height: 667 }

/** Nothing wider than the phone's screen, and every field named by a `<label for>`. */
const checkPage = async (page: Page, what: string) => {
  const widths = await page.evaluate(() => {
    const dom = globalThis as unknown as Dom
    return { scroll: dom.document.documentElement.scrollWidth, screen: dom.innerWidth }
  })
  assert.strictEqual(widths.screen, phone.width)
  assert.isAtMost(widths.scroll, widths.screen, `${what}: no horizontal scroll at ${widths.screen}px`)
  const unlabelled = await page
    .locator("input:not([type=hidden]), select, textarea")
    .evaluateAll((fields) =>
      fields
        .filter(
          (field) =>
            field.id === "" ||
            (globalThis as unknown as Dom).document.querySelector(`label[for="${field.id}"]`) === null
        )
        .map((field) => field.outerHTML)
    )
  assert.deepStrictEqual(unlabelled, [], `${what}: every field has a label`)
}

const echo = (query: string) => `/v1/profnet/test-echo?value=x&${query}`
const pathOf = (url: string) => {
  const parsed = new URL(url)
  return `${parsed.pathname}${parsed.search}`
}

describe(`checkout, upgrade and portal pages in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect(
      "TRIAL_CAP_EXCEEDED → its offer's checkout_url → flex on the local rail → the SAME key calls realtime",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const ip = "10.77.0.1"
          const { key, account_id } = yield* app.mint(ip)
          const capped = yield* app.call(echo("freshness=realtime"), {
            key,
            ip,
            idempotencyKey: crypto.randomUUID()
          })
          assert.strictEqual(capped.status, 403)
          assert.strictEqual(capped.body.code, "TRIAL_CAP_EXCEEDED")
          // A free key's upgrade_url is the public page; the offer's checkout credits this same key.
          assert.strictEqual(capped.body.upgrade_url, `${baseUrl}/upgrade`)
          const upgradeUrl: string = capped.body.offer.checkout_url
          assert.strictEqual(upgradeUrl, `${baseUrl}/upgrade?account=${account_id}`)

          yield* withBrowser(app.url, { ip, viewport: phone }, async (run) => {
            const { page } = run
            await page.goto(upgradeUrl)
            await checkPage(page, "/upgrade?account=")
            const picker = await textOf(page)
            assert.include(picker, `For account ${account_id}.`)
            assert.notInclude(picker, "not available yet")
            await page.getByRole("button", { name: "Buy flex ($20.00)" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/upgrade"), 303)
            assert.match(page.url(), /^http:\/\/svc\.test\/checkout\/cs_[0-9A-Za-z]{43}$/)
            await checkPage(page, "the checkout")
            const checkout = await textOf(page)
            assert.include(checkout, "Checkout (test mode)")
            assert.include(checkout, "flex: $20.00 once for 10,000 credits")
            await page.getByRole("button", { name: "Pay $20.00 (test mode)" }).click()
            await checkPage(page, "paid")
            const paid = await textOf(page)
            assert.include(paid, "Payment received")
            assert.include(paid, `The credits are on account ${account_id}`)
            // No key started it: the page named the account.
            assert.notInclude(paid, "The key that started this checkout")
            assert.include(paid, "No key started this checkout: it named the account on the upgrade page")
            assert.include(paid, `every key of account ${account_id} keeps working`)
            assert.strictEqual(await page.locator("#api-key").count(), 0, "a keyed checkout shows no key")
            assert.deepStrictEqual(run.elsewhere, [])
          })

          const realtime = yield* app.call(echo("freshness=realtime"), {
            key,
            ip,
            idempotencyKey: crypto.randomUUID()
          })
          assert.strictEqual(realtime.status, 200, JSON.stringify(realtime.body))
          assert.strictEqual(realtime.body.receipt.funding.free_tier, 0)
          const usage = yield* app.call("/v1/usage", { key, ip })
          assert.strictEqual(usage.body.plan, "flex")
        }),
      120_000
    )

    it.effect(
      "a keyless checkout from /upgrade shows its new key once; unknown accounts and sessions are 404",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const ip = "10.77.0.2"
          const key = yield* withBrowser(app.url, { ip, viewport: phone }, async (run) => {
            const { page } = run
            await page.goto(`${baseUrl}/upgrade`)
            await checkPage(page, "/upgrade")
            assert.include(await textOf(page), "a checkout from here makes a new account")
            assert.strictEqual(await page.locator("input[name=account]").count(), 0)
            await page.getByRole("button", { name: "Buy flex ($20.00)" }).click()
            const checkoutUrl = page.url()
            assert.include(await textOf(page), "the next page shows the new account's key once")
            await page.getByRole("button", { name: "Pay $20.00 (test mode)" }).click()
            await checkPage(page, "paid, keyless")
            const paid = await textOf(page)
            assert.include(paid, "Payment received")
            assert.include(paid, "Shown once: store it now.")
            // biome-ignore lint/performance/useDomNodeTextContent: the rendered text, as a person reads it
            const shown = (await page.locator("#api-key").innerText()).trim()
            assert.isAbove(shown.length, 20)

            await page.reload()
            assert.strictEqual(lastStatus(run, "GET", new URL(checkoutUrl).pathname), 200)
            const again = await textOf(page)
            assert.include(again, "Payment received")
            assert.include(again, "is never shown again")
            assert.notInclude(again, shown)
            assert.strictEqual(await page.locator("#api-key").count(), 0)

            await page.goto(`${baseUrl}/upgrade?account=acct_doesnotexist`)
            await page.getByRole("button", { name: "Buy flex ($20.00)" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/upgrade"), 404)
            await checkPage(page, "unknown account")
            assert.include(await textOf(page), "There is no account acct_doesnotexist here")

            const missing = await page.goto(`${baseUrl}/checkout/cs_${"A".repeat(43)}`)
            assert.strictEqual(missing?.status(), 404)
            await checkPage(page, "unknown checkout")
            assert.include(await textOf(page), "No open checkout has this address")
            assert.deepStrictEqual(run.elsewhere, [])
            return shown
          })
          const usage = yield* app.call("/v1/usage", { key, ip })
          assert.strictEqual(usage.status, 200, JSON.stringify(usage.body))
          assert.strictEqual(usage.body.plan, "flex")
        }),
      120_000
    )

    it.effect(
      "the portal lists the purchase and cancels a production subscription at period end",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const ip = "10.77.0.3"
          const { key, account_id } = yield* app.mint(ip)
          const session = yield* signIn(app, "portal-page@billing.test", { key, ip })
          const link = (yield* post(app, `/v1/portal?account_id=${account_id}`, undefined, {
            key: session.management_token,
            ip
          })).body.url as string
          assert.match(link, /^http:\/\/svc\.test\/portal\?session=/)

          yield* withBrowser(app.url, { ip, viewport: phone }, async (run) => {
            const { page } = run
            await page.goto(`${baseUrl}/upgrade?account=${account_id}`)
            await page.getByRole("button", { name: "Subscribe to production ($99.00 a month)" }).click()
            await page.getByRole("button", { name: "Pay $99.00 (test mode)" }).click()
            assert.include(await textOf(page), "Payment received")

            await page.goto(link)
            assert.strictEqual(lastStatus(run, "GET", "/portal"), 200)
            await checkPage(page, "/portal")
            const portal = await textOf(page)
            assert.include(portal, `Account ${account_id} · plan production`)
            assert.include(portal, "active, renews")
            assert.strictEqual(await page.locator("table tbody tr").count(), 1, "the one purchase is listed")
            // biome-ignore lint/performance/useDomNodeTextContent: the rendered text, as a person reads it
            const row = await page.locator("table tbody tr").innerText()
            assert.include(row, "production")
            assert.include(row, "75,000")
            assert.include(row, "$99.00")

            await page.getByRole("button", { name: "Cancel at period end" }).click()
            assert.strictEqual(lastStatus(run, "POST", "/portal/cancel"), 303)
            assert.strictEqual(pathOf(page.url()), pathOf(link))
            await checkPage(page, "/portal after cancelling")
            // biome-ignore lint/performance/useDomNodeTextContent: the rendered text, as a person reads it
            const status = await page.locator("#subscription-status").innerText()
            assert.include(status, "it will not renew")
            assert.strictEqual(await page.getByRole("button", { name: "Cancel at period end" }).count(), 0)

            const expired = await page.goto(`${baseUrl}/portal?session=${"A".repeat(43)}`)
            assert.strictEqual(expired?.status(), 404)
            await checkPage(page, "unknown portal link")
            assert.include(await textOf(page), "Ask for a new one")
            assert.deepStrictEqual(run.elsewhere, [])
          })
          const usage = yield* app.call("/v1/usage", { key, ip, idempotencyKey: crypto.randomUUID() })
          assert.strictEqual(usage.body.subscription?.cancel_at_period_end, true, JSON.stringify(usage.body))
        }),
      120_000
    )
  })
})

describe(`the pack picker with two rails in Chromium (${storeName})`, () => {
  layer(testApp(testOperations, { checkoutRails: ["local", "stripe"] }), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect(
      "each pack asks which rail, labelled, at 375px; the test-mode rail is picked and pays",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const ip = "10.77.0.4"
          const { account_id } = yield* app.mint(ip)
          yield* withBrowser(app.url, { ip, viewport: phone }, async (run) => {
            const { page } = run
            await page.goto(`${baseUrl}/upgrade?account=${account_id}`)
            await checkPage(page, "/upgrade with two rails")
            const flex = page.locator("section", { has: page.locator("#pack-flex") })
            assert.strictEqual(await flex.getByRole("radio").count(), 2)
            assert.isTrue(await flex.getByLabel("Test-mode checkout (no card, no money moves)").isChecked())
            await flex.getByLabel("Card, through Stripe").check()
            await flex.getByLabel("Test-mode checkout (no card, no money moves)").check()
            await flex.getByRole("button", { name: "Buy flex ($20.00)" }).click()
            assert.include(await textOf(page), "Checkout (test mode)")
            await page.getByRole("button", { name: "Pay $20.00 (test mode)" }).click()
            assert.include(await textOf(page), "Payment received")
            assert.deepStrictEqual(run.elsewhere, [])
          })
        }),
      120_000
    )
  })
})
