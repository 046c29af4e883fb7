import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { baseUrl, mailReader, signInWithCode, skipReason, withBrowser } from "./browser.ts"

/** The little of the DOM these checks read (the tests compile without the DOM library). */
interface Dom {
  readonly document: {
    readonly documentElement: { readonly scrollWidth: number }
    readonly querySelector: (selector: string) => unknown
  }
  readonly innerWidth: number
}

/** Nothing wider than the screen, and every field named by a `<label for>`. */
const checkPage = async (page: Page, what: string) => {
  const widths = await page.evaluate(() => {
    const dom = globalThis as unknown as Dom
    return { scroll: dom.document.documentElement.scrollWidth, screen: dom.innerWidth }
  })
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

describe(`the pages on a phone in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "375px wide: no horizontal scroll, labelled fields, nothing loaded from other hosts",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const mail = yield* mailReader
          const ip = "10.76.0.1"
          const minted = yield* app.mint(ip)
          yield* signIn(app, "phone-owner@example.com", { key: minted.key, ip })
          yield* withBrowser(app.url, { ip, viewport: { width: 375, height: 667 } }, async (run) => {
            const { page } = run
            for (const path of [
              "/",
              "/upgrade?account=acct_0123456789abcdef",
              "/docs/errors",
              `/claim?account=${minted.account_id}`,
              "/login",
              "/login?redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&state=s",
              `/login?token=${"A".repeat(43)}`,
              "/activate?user_code=BCDF-GHJK",
              "/recover",
              "/recover?token=nope"
            ]) {
              await page.goto(`${baseUrl}${path}`)
              await checkPage(page, path)
            }
            await page.goto(`${baseUrl}/login`)
            await page.getByLabel("Email address").fill("phone-owner@example.com")
            await page.getByRole("button", { name: "Send me a code" }).click()
            await checkPage(page, "the code form")
            await page.goto(`${baseUrl}/login`)
            await signInWithCode(page, mail, "phone-owner@example.com")
            await checkPage(page, "signed in")
            await page.goto(`${baseUrl}/activate`)
            await checkPage(page, "/activate signed in")

            await page.goto(`${baseUrl}/recover`)
            await page.getByLabel("Email address").fill("phone-owner@example.com")
            await page.getByRole("button", { name: "Send me a recovery link" }).click()
            await checkPage(page, "recovery sent")
            await page.goto(
              `${baseUrl}/recover?token=${await mail.link("phone-owner@example.com", "/recover")}`
            )
            await checkPage(page, "recovery link")
            await page.getByRole("button", { name: "Create the new key" }).click()
            await checkPage(page, "the new key")
            assert.deepStrictEqual(run.elsewhere, [], "no page loads anything from other hosts")
          })
        }),
      60_000
    )
  })
})
