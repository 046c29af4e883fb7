import { type Case, prepareCases } from "./cases.ts"
import { type LoadResult, runLoad } from "./load.ts"
import type { Options } from "./options.ts"
import { type Service, type Store, startService } from "./service.ts"

export interface MetricsRound {
  readonly metrics: "on" | "off"
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly errors: number
}

export interface MetricsComparison {
  readonly store: Store
  readonly rounds: ReadonlyArray<MetricsRound>
  /** Mean req/s with metrics on over mean req/s with them off. */
  readonly ratio: number
  /** The median of each on round over the off round beside it (less moved by the machine's load). */
  readonly pairedMedianRatio: number
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const mean = (values: ReadonlyArray<number>) => values.reduce((sum, value) => sum + value, 0) / values.length

/**
 * `--compare-metrics N`: the metered cache hit with metrics on (the default) and with `METRICS=off`,
 * in N rounds of each, alternating off and on, so that the machine's changing load falls on both.
 * Both services run side by side on the store (PostgreSQL with --pg), each with its own accounts.
 */
export const compareMetrics = async (
  rounds: number,
  databaseUrl: string | undefined,
  options: Options,
  tool: "wrk" | "autocannon",
  log: (line: string) => void,
  defer: (cleanup: () => Promise<void>) => void
): Promise<MetricsComparison> => {
  const store: Store = databaseUrl === undefined ? "pglite" : "postgres"
  const start = async (metrics: "on" | "off") => {
    const service = await startService({
      label: `metrics-${metrics}`,
      store,
      databaseUrl,
      env: { METRICS: metrics }
    })
    defer(service.stop)
    return service
  }
  const services: Record<"on" | "off", Service> = { off: await start("off"), on: await start("on") }
  const cases: Record<"on" | "off", Case> = {
    off: (await prepareCases(services.off, options.accounts))[0]!,
    on: (await prepareCases(services.on, options.accounts))[0]!
  }
  const measured: Array<MetricsRound> = []
  const one = async (metrics: "on" | "off"): Promise<LoadResult> => {
    const entries = cases[metrics].entries
    if ("unavailable" in entries) throw new Error("no cache-hit case")
    return runLoad({
      label: `${store}-metrics-${metrics}`,
      baseUrl: services[metrics].url,
      method: "GET",
      entries,
      duration: options.duration,
      connections: options.connections,
      tool,
      countStatuses: true
    })
  }
  // A short unmeasured load on each first: JIT and caches warm alike.
  log(`${store}: metrics on/off warm-up`)
  for (const metrics of ["off", "on"] as const) await one(metrics)
  for (let round = 1; round <= rounds; round++) {
    for (const metrics of round % 2 === 1 ? (["off", "on"] as const) : (["on", "off"] as const)) {
      const load = await one(metrics)
      const errors = Object.entries(load.statuses)
        .filter(([status]) => status !== "200")
        .reduce((sum, [, count]) => sum + count, load.socketErrors)
      measured.push({ metrics, rps: load.rps, p50Ms: load.p50Ms, p99Ms: load.p99Ms, errors })
      log(`${store}: round ${round}, metrics ${metrics}: ${load.rps.toFixed(0)} req/s, p99 ${load.p99Ms} ms`)
    }
  }
  const on = measured.filter((row) => row.metrics === "on")
  const off = measured.filter((row) => row.metrics === "off")
  return {
    store,
    rounds: measured,
    ratio: mean(on.map((row) => row.rps)) / mean(off.map((row) => row.rps)),
    pairedMedianRatio: median(on.map((row, i) => row.rps / off[i]!.rps))
  }
}

export const comparisonReport = (comparison: MetricsComparison): string =>
  [
    `metered cache hit, ${comparison.store}, metrics on vs METRICS=off (alternating rounds)`,
    ...comparison.rounds.map(
      (row, i) =>
        `  ${String(Math.floor(i / 2) + 1).padStart(2)} ${row.metrics.padEnd(3)} ${row.rps.toFixed(0).padStart(7)} req/s  p50 ${row.p50Ms} ms  p99 ${row.p99Ms} ms${row.errors > 0 ? `  ${row.errors} errors` : ""}`
    ),
    `  on/off: ${comparison.ratio.toFixed(3)} (means), ${comparison.pairedMedianRatio.toFixed(3)} (median of pairs); the goal is 0.95 or more`
  ].join("\n")
