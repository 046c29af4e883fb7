import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { TestApp } from "./app.ts"

/** The value of one series on the metrics page (0 when absent). */
export const seriesValue = (page: string, series: string): number => {
  const line = page.split("\n").find((candidate) => candidate.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

/** The test app's metrics token (METRICS_TOKEN), as `/metrics` takes it. */
export const operatorHeaders = { authorization: "Bearer test-metrics-token-4b8e1d6a9c3f7e2a5d" }

/** The test app's metrics page, read with its metrics token. */
export const scrapeMetrics = Effect.gen(function* () {
  const app = yield* TestApp
  const reply = yield* app.call("/metrics", { headers: operatorHeaders })
  assert.strictEqual(reply.status, 200)
  return reply.body as string
})
