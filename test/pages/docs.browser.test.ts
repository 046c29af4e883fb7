import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { TestApp, testApp } from "../support/app.ts"
import { testOperations } from "../support/testOperations.ts"
import { baseUrl, lastStatus, skipReason, textOf, withBrowser } from "./browser.ts"

/**
 * `/docs` is Scalar's page: a 3 MB inline script that builds the reference in the browser. Its
 * Content-Security-Policy lets exactly that run: Chromium renders it, and sends a test request from
 * it, with no violation reported and nothing loaded from elsewhere.
 */
/** Scalar's API client: "Test Request" on the first operation (POST /v1/keys/mint), then its "Send", answered. */
const sendMint = async (page: Page) => {
  await page
    .getByRole("button", { name: /Test Request/i })
    .first()
    .click()
  const sent = page.waitForResponse((answer) => answer.url() === `${baseUrl}/v1/keys/mint`, {
    timeout: 15_000
  })
  await page
    .getByRole("button", { name: /Send post request to/ })
    .first()
    .click()
  await sent
}

/** Closes the client (Escape), goes to the test-echo operation and opens the client on it. */
const openEcho = async (page: Page) => {
  await page.keyboard.press("Escape")
  await page.evaluate(() => {
    ;(globalThis as unknown as { location: { hash: string } }).location.hash =
      "#tag/profnet/GET/v1/profnet/test-echo"
  })
  await page
    .locator("section", { has: page.locator("pre code", { hasText: "/v1/profnet/test-echo" }) })
    .getByRole("button", { name: /Test Request/i })
    .first()
    .click()
}

describe("the /docs page in Chromium", () => {
  layer(testApp(testOperations), { timeout: 120_000 })((it) => {
    it.effect(
      "renders the reference and sends a test request under its policy, with no violation",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const seen = yield* withBrowser(app.url, { ip: "10.92.0.1" }, async (run) => {
            const { page } = run
            const violations: Array<string> = []
            page.on("console", (message) => {
              if (/Content.Security.Policy/i.test(message.text())) violations.push(message.text())
            })
            // Every report, also of a blocked attempt the page's own code catches.
            await page.addInitScript({
              content: `document.addEventListener("securitypolicyviolation", (event) =>
                console.error("Content Security Policy violation: " + event.violatedDirective + " " + event.blockedURI))`
            })
            const response = await page.goto(`${baseUrl}/docs`)
            assert.strictEqual(response?.status(), 200)
            await page.getByText("Mint a free trial key").first().waitFor({ timeout: 30_000 })
            const rendered = await textOf(page)
            await sendMint(page)
            // Scalar's request is over only once it has read the body and shown the answer: Escape
            // closes its client, which aborts a request still in flight, and an abort while the body
            // is read skips its "request complete" event, so its Send buttons would stay disabled.
            await page
              .getByRole("dialog", { name: "API Client" })
              .getByRole("region", { name: "Response" })
              .getByRole("link", { name: /200 OK/ })
              .waitFor({ timeout: 15_000 })
            // A data operation's "Send", twice: each request carries a fresh Idempotency-Key, not the
            // sample's fixed one (which would be IDEMPOTENCY_KEY_REUSED with other arguments).
            const keys: Array<string> = []
            page.on("request", (request) => {
              const key = request.headers()["idempotency-key"]
              if (request.url().startsWith(`${baseUrl}/v1/profnet/test-echo`) && key !== undefined)
                keys.push(key)
            })
            await openEcho(page)
            for (const _ of [1, 2]) {
              const echoed = page.waitForResponse(
                (answer) => answer.url().includes("/v1/profnet/test-echo"),
                {
                  timeout: 15_000
                }
              )
              await page
                .getByRole("button", { name: /Send get request to/ })
                .first()
                .click()
              await echoed
            }
            return {
              keys,
              violations,
              csp: response?.headers()["content-security-policy"] ?? "",
              rendered,
              elsewhere: run.elsewhere,
              mint: lastStatus(run, "POST", "/v1/keys/mint")
            }
          })
          assert.deepStrictEqual(seen.violations, [])
          assert.deepStrictEqual(seen.elsewhere, [])
          assert.include(seen.rendered, "Mint a free trial key")
          assert.strictEqual(seen.mint, 200)
          assert.lengthOf(seen.keys, 2)
          for (const key of seen.keys) assert.match(key, /^docs-[0-9a-f]{32}$/)
          assert.notStrictEqual(seen.keys[0], seen.keys[1])
          assert.include(seen.rendered, "Authenticate first.")
          assert.match(
            seen.csp,
            /^default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-[^']+' 'sha256-[^']+'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'$/
          )
        }),
      90_000
    )

    it.effect(
      "closing Scalar's client while an answer's body is still read leaves its Send buttons working",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const echoed = yield* withBrowser(app.url, { ip: "10.92.0.2" }, async (run) => {
            const { page } = run
            // Every body read a second late, so that Escape comes while the mint's is still read.
            await page.addInitScript({
              content: `const read = Response.prototype.arrayBuffer
              Response.prototype.arrayBuffer = function () {
                return new Promise((resolve) => setTimeout(resolve, 1000)).then(() => read.call(this))
              }`
            })
            await page.goto(`${baseUrl}/docs`)
            await page.getByText("Mint a free trial key").first().waitFor({ timeout: 30_000 })
            await sendMint(page)
            await openEcho(page)
            const echo = page.waitForResponse((answer) => answer.url().includes("/v1/profnet/test-echo"), {
              timeout: 20_000
            })
            await page
              .getByRole("button", { name: /Send get request to/ })
              .first()
              .click({ timeout: 20_000 })
            return (await echo).status()
          })
          // Answered (401: no key was pasted); with the body read unawaited, Send stayed disabled.
          assert.strictEqual(echoed, 401)
        }),
      90_000
    )
  })
})
