/**
 * `npm run test:lighthouse`: Lighthouse (pinned, 12.2.3) on every page of the tour at its mobile
 * settings, in Debian's Chromium, against a service started here (PGlite in memory, simulated
 * upstream). Every page must score at least 95 in performance, accessibility, best practices and
 * SEO; the scores go to `.artifacts/lighthouse/scores.md`, and the run exits non-zero below that.
 *
 * Performance is timed on a shared machine, and its total blocking time moves with the machine's
 * load (a page of 81 elements and no script of its own measured 80 ms here and 290 ms in a busy CI
 * run). As Lighthouse's own guidance on variability advises, a page whose first performance score
 * is below the minimum is audited twice more and judged by its median run; the other three
 * categories do not depend on timing and are the same in every run.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { freePort } from "../oauth/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { testOperations } from "../support/testOperations.ts"
import { toolPath } from "../support/tools.ts"
import { makeTour } from "./tour.ts"

/**
 * Lighthouse and its Chrome launcher come from the tools package (`tools/`, not in the root
 * install), so their types are not at hand for the typecheck: what this script reads of them.
 */
interface LighthouseResult {
  readonly lhr: {
    readonly runtimeError?: { readonly message: string }
    readonly categories: Record<
      string,
      | {
          readonly score: number | null
          readonly auditRefs: ReadonlyArray<{ readonly id: string; readonly weight: number }>
        }
      | undefined
    >
    readonly audits: Record<
      string,
      | {
          readonly score: number | null
          readonly displayValue?: string
          readonly title: string
          readonly details?: unknown
        }
      | undefined
    >
  }
}
const lighthouse: (
  url: string,
  flags: {
    readonly port: number
    readonly output: "json"
    readonly logLevel: "error"
    readonly onlyCategories: Array<string>
    readonly extraHeaders: Record<string, string>
  }
) => Promise<LighthouseResult | undefined> = (await import(toolPath("lighthouse/core/index.js"))).default
const chromeLauncher: {
  readonly launch: (options: {
    readonly chromePath: string
    readonly chromeFlags: Array<string>
  }) => Promise<{ readonly port: number; readonly kill: () => void }>
} = await import(toolPath("chrome-launcher/dist/index.js"))

const minimum = Number(process.env.LIGHTHOUSE_MIN_SCORE ?? 95)
const categories = ["performance", "accessibility", "best-practices", "seo"] as const
const only = process.env.LIGHTHOUSE_PAGES?.split(",")
/** Runs of a page whose first performance score is below the minimum; the median one counts. */
const runsWhenBelow = 3

const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const ip = "10.89.0.1"
const out = join(process.cwd(), ".artifacts", "lighthouse")

interface Row {
  readonly name: string
  readonly path: string
  readonly scores: Record<(typeof categories)[number], number>
  /** The audits that cost points, by category. */
  readonly lost: ReadonlyArray<string>
  /** Every run's performance score, when the page was audited more than once. */
  readonly performanceRuns?: ReadonlyArray<number>
}

type Run = Omit<Row, "name" | "path">

const audit = (url: string, cookie: string, chromePort: number): Promise<Run> =>
  lighthouse(url, {
    port: chromePort,
    output: "json",
    logLevel: "error",
    onlyCategories: [...categories],
    extraHeaders: { "x-forwarded-for": ip, ...(cookie === "" ? {} : { cookie }) }
  }).then((result) => {
    if (result === undefined) throw new Error(`no Lighthouse result for ${url}`)
    const lhr = result.lhr
    if (lhr.runtimeError !== undefined) throw new Error(`${url}: ${lhr.runtimeError.message}`)
    const scores = Object.fromEntries(
      categories.map((id) => [id, Math.round((lhr.categories[id]?.score ?? 0) * 100)])
    ) as Row["scores"]
    const lost = categories.flatMap((id) =>
      (lhr.categories[id]?.auditRefs ?? [])
        .filter((ref) => ref.weight > 0 && (lhr.audits[ref.id]?.score ?? 1) < 1)
        .map((ref) => {
          const audit = lhr.audits[ref.id]
          // The first offending item (a console error's text, a resource's URL) says what to fix.
          const items = (audit?.details as { items?: Array<Record<string, unknown>> } | undefined)?.items
          const first = items?.[0]
          const what =
            first === undefined ? "" : `: ${String(first.description ?? first.url ?? "").slice(0, 160)}`
          return `${id}: ${ref.id} (${audit?.displayValue ?? audit?.title})${what}`
        })
    )
    return { scores, lost }
  })

/** One run, or, below the minimum in performance, the median of `runsWhenBelow` runs by that score. */
const auditPage = async (url: string, cookie: string, chromePort: number): Promise<Run> => {
  const first = await audit(url, cookie, chromePort)
  if (first.scores.performance >= minimum) return first
  const runs = [first]
  while (runs.length < runsWhenBelow) runs.push(await audit(url, cookie, chromePort))
  const sorted = [...runs].sort((a, b) => a.scores.performance - b.scores.performance)
  const median = sorted[Math.floor(sorted.length / 2)] as Run
  return { ...median, performanceRuns: runs.map((run) => run.scores.performance) }
}

const program = Effect.gen(function* () {
  const app = yield* TestApp
  const tour = yield* makeTour(app, baseUrl, ip)
  const pages = tour.pages.filter((entry) => only === undefined || only.includes(entry.name))
  return yield* Effect.promise(async () => {
    const chrome = await chromeLauncher.launch({
      chromePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      chromeFlags: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    })
    const rows: Array<Row> = []
    try {
      for (const entry of pages) {
        const row = {
          name: entry.name,
          path: entry.path,
          ...(await auditPage(`${baseUrl}${entry.path}`, entry.cookie, chrome.port))
        }
        rows.push(row)
        console.log(
          `${entry.name.padEnd(20)} ${categories.map((id) => `${id} ${row.scores[id]}`).join("  ")}`
        )
        if (row.performanceRuns !== undefined)
          console.log(
            `  - performance of ${row.performanceRuns.length} runs: ${row.performanceRuns.join(", ")} (the median counts)`
          )
        for (const lost of row.lost) console.log(`  - ${lost}`)
      }
    } finally {
      chrome.kill()
    }
    return rows
  })
}).pipe(Effect.provide(testApp(testOperations, { port, baseUrl })))

const rows = await Effect.runPromise(program)
mkdirSync(out, { recursive: true })
const table = [
  `| page | ${categories.join(" | ")} |`,
  `|---|${categories.map(() => "---").join("|")}|`,
  ...rows.map((row) => `| ${row.name} | ${categories.map((id) => row.scores[id]).join(" | ")} |`)
].join("\n")
writeFileSync(join(out, "scores.md"), `${table}\n`)
writeFileSync(join(out, "scores.json"), `${JSON.stringify(rows, null, 2)}\n`)
const below = rows.filter((row) => categories.some((id) => row.scores[id] < minimum))
console.log(`\n${table}\n`)
if (below.length > 0) {
  console.log(`Below ${minimum}: ${below.map((row) => row.name).join(", ")}`)
  process.exit(1)
}
console.log(`${rows.length} pages at or above ${minimum} in all four categories`)
process.exit(0)
