import { mkdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { assert } from "@effect/vitest"
import type { Page } from "playwright-core"
import { baseUrl, textOf } from "../pages/browser.ts"

const require = createRequire(import.meta.url)
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8")

/** Where CI keeps the screenshots (`.artifacts/`, uploaded as artifacts, never committed). */
const artifacts = join(process.cwd(), ".artifacts", "dashboard")

/** The little of the DOM these checks read (the tests compile without the DOM library). */
interface Dom {
  readonly document: {
    readonly documentElement: { readonly scrollWidth: number; readonly clientWidth: number }
  }
}

export const phone = { width: 360, height: 780 }
export const desktop = { width: 1280, height: 900 }

/**
 * axe-core in the page: evaluated over the DevTools protocol (the page's own CSP admits only the
 * copy script), then run on the whole document. Serious and critical violations fail the test.
 */
export const assertAccessible = async (page: Page, name: string) => {
  await page.evaluate(axeSource)
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<any> } }
    ).axe
    const results = await axe.run((globalThis as unknown as Dom).document, { resultTypes: ["violations"] })
    return (
      results.violations as Array<{
        id: string
        impact: string
        help: string
        nodes: Array<{ target: unknown }>
      }>
    ).map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      targets: violation.nodes.map((node) => JSON.stringify(node.target))
    }))
  })
  const blocking = violations.filter(
    (violation) => violation.impact === "serious" || violation.impact === "critical"
  )
  assert.deepStrictEqual(blocking, [], `${name}: axe-core found serious or critical violations`)
}

/** Nothing wider than the viewport: a 360 px phone never scrolls sideways. */
export const assertFits = async (page: Page, name: string) => {
  const widths = await page.evaluate(() => {
    const root = (globalThis as unknown as Dom).document.documentElement
    return { content: root.scrollWidth, viewport: root.clientWidth }
  })
  assert.isAtMost(widths.content, widths.viewport, `${name} scrolls sideways at ${widths.viewport}px`)
}

/** The page at phone and desktop widths: a screenshot of each under `.artifacts/`, axe-core and the fit. */
export const checkPage = async (page: Page, name: string) => {
  for (const [label, size] of [
    ["phone", phone],
    ["desktop", desktop]
  ] as const) {
    await page.setViewportSize(size)
    const file = join(artifacts, `${name}-${label}.png`)
    mkdirSync(dirname(file), { recursive: true })
    await page.screenshot({ path: file, fullPage: true })
    await assertAccessible(page, `${name} (${label})`)
    await assertFits(page, `${name} (${label})`)
  }
}

/** The page's HTML as served (scripts could not change it: the page has none but the copy button's). */
export const htmlOf = (page: Page) => page.content()

export const dashboard = (path = "", account?: string) =>
  `${baseUrl}/dashboard${path}${account === undefined ? "" : `?account=${account}`}`

export { textOf }
