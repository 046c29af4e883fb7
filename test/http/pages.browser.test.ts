import { execFileSync } from "node:child_process"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { type Browser, chromium, type Page } from "playwright-core"
import { errorCatalog } from "../../src/contract/errors.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

/**
 * The pages behind the links the API hands out, as a person's browser shows them: Debian's
 * Chromium driven by playwright-core. Without Chromium the test skips locally and fails in CI.
 */
const chromiumPath = (() => {
  try {
    return execFileSync("which", ["chromium"], { encoding: "utf8" }).trim() || undefined
  } catch {
    return undefined
  }
})()
const inCi = process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false"
const skipReason =
  chromiumPath === undefined && !inCi
    ? "no `chromium` on PATH (apt-get install -y chromium); CI=true makes this a failure"
    : undefined

const baseUrl = "http://svc.test"

/** A browser whose requests to the configured base URL reach the test server; any other host is refused. */
const withBrowser = <A>(
  serverUrl: string,
  run: (page: Page, elsewhere: ReadonlyArray<string>) => Promise<A>
) =>
  Effect.promise(async () => {
    if (chromiumPath === undefined) throw new Error("CI is set and `chromium` is not installed")
    const browser: Browser = await chromium.launch({
      executablePath: chromiumPath,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        // A redirect the page follows itself (the dashboard's to /login) is not routed: name the
        // base URL's host for the browser too.
        `--host-resolver-rules=MAP svc.test:80 ${new URL(serverUrl).host}`
      ]
    })
    try {
      const context = await browser.newContext()
      const elsewhere: Array<string> = []
      await context.route("**/*", async (route) => {
        const url = route.request().url()
        if (!url.startsWith(`${baseUrl}/`)) {
          elsewhere.push(url)
          return route.abort()
        }
        // Redirects go back through this route (they name baseUrl, which only the route knows).
        const response = await route.fetch({ url: serverUrl + url.slice(baseUrl.length), maxRedirects: 0 })
        return route.fulfill({ response })
      })
      return await run(await context.newPage(), elsewhere)
    } finally {
      await browser.close()
    }
  })

/** Opens a page and returns its visible text and the absolute links on it. */
const open = async (page: Page, path: string) => {
  const response = await page.goto(`${baseUrl}${path}`)
  assert.strictEqual(response?.status(), 200, path)
  // biome-ignore lint/performance/useDomNodeTextContent: the rendered text, as a person reads it
  const text = await page.locator("body").innerText()
  const hrefs = await page
    .locator("a[href]")
    .evaluateAll((anchors) => anchors.map((anchor) => (anchor as unknown as { readonly href: string }).href))
  return { text, hrefs }
}

describe(`pages in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "/, /upgrade, /claim and /docs/errors read right and every link on them resolves",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          yield* withBrowser(app.url, async (page, elsewhere) => {
            const links = new Set<string>()

            const landing = await open(page, "/")
            // What an agent's developer came for, first: the mint, the platforms, an answer, the price.
            assert.include(landing.text, "Mint a key: one call, no signup")
            for (const platform of [
              "profnet, a professional network",
              "forum, a forum",
              "microblog, a microblog"
            ]) {
              assert.include(landing.text, platform)
            }
            assert.include(landing.text, '"name": "Richard Lewis"')
            assert.include(landing.text, "200 credits per UTC day")
            assert.include(landing.text, "4 credits including 2 sections")
            assert.strictEqual(
              await page.locator("main pre.primary").count(),
              1,
              "the mint is the one emphasised block"
            )
            // Sign in is secondary, in the body and in the header alike.
            assert.strictEqual(
              await page.locator("main a.button:not(.secondary)").textContent(),
              "API reference"
            )
            assert.strictEqual(await page.locator("main a.button.secondary").textContent(), "Sign in")
            assert.include(landing.text, `curl -s -X POST ${baseUrl}/v1/keys/mint`)
            assert.include(landing.text, `${baseUrl}/mcp`)
            for (const href of [`${baseUrl}/docs`, `${baseUrl}/docs/errors`, `${baseUrl}/v1/openapi.json`]) {
              assert.include(landing.hrefs, href)
            }
            for (const href of landing.hrefs) links.add(href)

            const upgrade = await open(page, "/upgrade?account=acct_browser01")
            for (const text of [
              "For account acct_browser01.",
              "flex",
              "one-time",
              "$20.00",
              "10,000 credits",
              "production",
              "monthly subscription",
              "$99.00 a month",
              "75,000 credits a month",
              "The credits land on this account",
              "INSUFFICIENT_CREDITS with the same Idempotency-Key",
              "TRIAL_CAP_EXCEEDED and BUDGET_EXHAUSTED with a fresh one"
            ]) {
              assert.include(upgrade.text, text)
            }
            assert.notInclude(upgrade.text, "not available yet")
            assert.strictEqual(await page.locator("section.pack").count(), 2, "each pack shown once")
            assert.strictEqual(await page.locator("section.pack code").count(), 0, "pack names as words")
            assert.include(upgrade.text, "10,000 credits: 2,500 profiles")
            // The value comes before where the credits land and the test rail's caveat.
            assert.isBelow(
              upgrade.text.indexOf("10,000 credits"),
              upgrade.text.indexOf("The credits land on this account")
            )
            const forms = page.locator(`main form[method=post][action="${baseUrl}/upgrade"]`)
            assert.strictEqual(await forms.count(), 2, "one checkout form per pack")
            assert.strictEqual(
              await forms.locator('input[type=hidden][name=account][value="acct_browser01"]').count(),
              2,
              "each form carries the account"
            )
            for (const name of ["Buy Flex ($20.00)", "Subscribe to Production ($99.00 a month)"]) {
              assert.strictEqual(await page.getByRole("button", { name }).count(), 1, name)
            }
            for (const href of upgrade.hrefs) links.add(href)

            const claim = await open(page, "/claim?account=acct_browser01")
            assert.include(claim.text, "a one-time grant of 10,000 credits")
            assert.include(claim.text, "An unclaimed trial key keeps working and never expires")
            assert.strictEqual(
              await page.locator("main form[method=post] input:not([type=hidden])").count(),
              2,
              "key and email"
            )
            assert.include(claim.hrefs, `${baseUrl}/upgrade?account=acct_browser01`)
            for (const href of claim.hrefs) links.add(href)

            const errors = await open(page, "/docs/errors#INVALID_INPUT")
            assert.notInclude(errors.text, "{base_url}")
            assert.notInclude(errors.text, "`")
            assert.include(errors.text, `curl -X POST ${baseUrl}/v1/keys/mint`)
            assert.notInclude(errors.text, "not available yet")
            assert.include(errors.text, `sign in with POST ${baseUrl}/v1/auth/email/start`)
            const section = page.locator("#INVALID_INPUT")
            assert.strictEqual(await section.count(), 1)
            // biome-ignore lint/performance/useDomNodeTextContent: the rendered text, as a person reads it
            assert.include(await section.innerText(), "INVALID_INPUT · HTTP 400")
            assert.strictEqual(await section.locator("code", { hasText: "param" }).count(), 1)
            const top = await section.evaluate((element) => element.getBoundingClientRect().top)
            assert.isBelow(Math.abs(top), 5, "the anchor is scrolled to")
            // The index is a table of every code of the catalogue: status, meaning, whether a retry can succeed.
            const rows = page.locator("main table tbody tr")
            assert.strictEqual(await rows.count(), Object.keys(errorCatalog).length)
            for (const [code, spec] of Object.entries(errorCatalog)) {
              const row = rows.filter({ has: page.locator(`a[href="#${code}"]`) })
              const cells = await row.locator("td").allInnerTexts()
              assert.deepStrictEqual(cells, [
                code,
                String(spec.status),
                spec.title,
                spec.retriable ? "retriable" : "no"
              ])
            }
            for (const href of errors.hrefs) links.add(href)

            for (const href of links) {
              assert.isTrue(href.startsWith(`${baseUrl}/`), `${href} stays on the service`)
              const [address, fragment] = href.split("#")
              const response = await page.goto(address!)
              assert.strictEqual(response?.status(), 200, href)
              if (fragment !== undefined && fragment !== "") {
                assert.strictEqual(await page.locator(`[id="${fragment}"]`).count(), 1, href)
              }
            }
            assert.isAbove(links.size, 20)
            assert.deepStrictEqual(elsewhere, [], "no page, /docs included, loads anything from other hosts")
          })
        }),
      60_000
    )
  })
})
