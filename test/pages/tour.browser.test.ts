import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { chromium } from "playwright-core"
import { freePort } from "../oauth/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { chromiumPath, skipReason } from "./browser.ts"
import { makeTour } from "./tour.ts"

/**
 * Every page at 360 and 1280 px: a full-page screenshot of each under `.artifacts/screenshots/`
 * (CI keeps `.artifacts`), and at 360 px nothing wider than the screen. `/docs` (Scalar) is checked
 * for the fit too, at both widths.
 */
const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const out = join(process.cwd(), ".artifacts", process.env.SCREENSHOTS_DIR ?? "screenshots")

interface Dom {
  readonly document: {
    readonly documentElement: { readonly scrollWidth: number; readonly clientWidth: number }
  }
}

describe(`every page at 360 and 1280 px (${storeName})`, () => {
  layer(testApp(testOperations, { port, baseUrl }), { timeout: 180_000, excludeTestServices: true })((it) => {
    it.effect(
      "screenshots of every page; none scrolls sideways at 360 px",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const ip = "10.88.0.1"
          const tour = yield* makeTour(app, baseUrl, ip)
          mkdirSync(out, { recursive: true })
          const wide = yield* Effect.promise(async () => {
            const browser = await chromium.launch({
              executablePath: chromiumPath!,
              args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
            })
            const overflow: Array<string> = []
            try {
              for (const width of [360, 1280]) {
                const context = await browser.newContext({
                  viewport: { width, height: width === 360 ? 780 : 900 },
                  extraHTTPHeaders: { "x-forwarded-for": ip }
                })
                const page = await context.newPage()
                for (const entry of [...tour.pages, { name: "docs", path: "/docs", cookie: "" }]) {
                  await context.clearCookies()
                  if (entry.cookie !== "")
                    await context.addCookies(
                      entry.cookie.split("; ").map((pair) => {
                        const index = pair.indexOf("=")
                        return { name: pair.slice(0, index), value: pair.slice(index + 1), url: baseUrl }
                      })
                    )
                  const answer = await page.goto(`${baseUrl}${entry.path}`, { waitUntil: "networkidle" })
                  assert.strictEqual(answer?.status(), 200, `${entry.name}: ${entry.path}`)
                  // Scalar lays `/docs` out for a few seconds after its script starts; measure the settled page.
                  if (entry.name === "docs") {
                    await page.getByText("Mint a free trial key").first().waitFor({ timeout: 30_000 })
                    await page.waitForTimeout(6_000)
                  }
                  await page.screenshot({ path: join(out, `${entry.name}-${width}.png`), fullPage: true })
                  const widths = await page.evaluate(() => {
                    const root = (globalThis as unknown as Dom).document.documentElement
                    return { content: root.scrollWidth, viewport: root.clientWidth }
                  })
                  if (widths.content > widths.viewport)
                    overflow.push(`${entry.name} at ${width}px: ${widths.content}px wide`)
                }
                await context.close()
              }
            } finally {
              await browser.close()
            }
            return overflow
          })
          assert.deepStrictEqual(wide, [], "no page scrolls sideways")
        }),
      180_000
    )
  })
})
