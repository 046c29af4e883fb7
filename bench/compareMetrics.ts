import {
  recordCacheLookup,
  recordHitChargeBatch,
  recordHitChargeStatement,
  recordHitChargeWait,
  recordMeteredCall,
  recordRequest
} from "../src/observability/metrics.ts"
import { routeLabeller } from "../src/surfaces/http/routeHints.ts"
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
  /** The service's CPU time (user and system) per request answered, in microseconds. */
  readonly cpuUsPerRequest: number
}

export interface MetricsComparison {
  readonly store: Store
  readonly rounds: ReadonlyArray<MetricsRound>
  /** Mean req/s with metrics on over mean req/s with them off. */
  readonly ratio: number
  /** The median of each on round over the off round beside it (less moved by the machine's load). */
  readonly pairedMedianRatio: number
  /** Mean CPU per request with metrics on over with them off: what the metrics cost the service itself. */
  readonly cpuRatio: number
  /** What a cache hit's metrics cost, measured alone in this process: nanoseconds per request. */
  readonly isolatedNsPerRequest: number
}

/**
 * The metrics work of one metered cache hit, alone and a million times over: the route's label,
 * the request's counter and histogram, the call's outcome and credits, the cache lookup, the hit's
 * wait in the group commit's queue, and the statement's batch size and time (one per request here;
 * shared by several under load).
 */
const isolatedMetricsWork = (): number => {
  const routeOf = routeLabeller(["/v1/profnet/profiles"], () => ({ paths: {} }) as never)
  const funding = { free_tier: 0, grant: 0, balance: 4 }
  const once = () => {
    const started = performance.now()
    recordCacheLookup(true)
    recordHitChargeBatch(1)
    recordHitChargeWait(0.0001)
    recordHitChargeStatement(0.002)
    recordMeteredCall("getProfile", "profnet", "ok", funding)
    recordRequest(
      routeOf("/v1/profnet/profiles?identifier=x"),
      "GET",
      200,
      (performance.now() - started) / 1000
    )
  }
  for (let i = 0; i < 100_000; i++) once()
  const rounds = Array.from({ length: 5 }, () => {
    const begun = performance.now()
    for (let i = 0; i < 1_000_000; i++) once()
    // Milliseconds for a million are nanoseconds for one.
    return performance.now() - begun
  })
  return median(rounds)
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
  /**
   * Fresh keys for each round (set 0 for the warm-up): at 600 calls a minute a key, the rounds
   * before would have their calls answered 429.
   */
  const casesFor = async (set: number): Promise<Record<"on" | "off", Case>> => ({
    off: (await prepareCases(services.off, options.accounts, set))[0]!,
    on: (await prepareCases(services.on, options.accounts, set))[0]!
  })
  let cases = await casesFor(0)
  const measured: Array<MetricsRound> = []
  const one = async (metrics: "on" | "off"): Promise<{ load: LoadResult; cpuUs: number }> => {
    const entries = cases[metrics].entries
    if ("unavailable" in entries) throw new Error("no cache-hit case")
    const before = services[metrics].cpuUs() ?? 0
    const load = await runLoad({
      label: `${store}-metrics-${metrics}`,
      baseUrl: services[metrics].url,
      method: "GET",
      entries,
      duration: options.duration,
      connections: options.connections,
      tool,
      countStatuses: true
    })
    return { load, cpuUs: (services[metrics].cpuUs() ?? 0) - before }
  }
  // A short unmeasured load on each first: JIT and caches warm alike.
  log(`${store}: metrics on/off warm-up`)
  for (const metrics of ["off", "on"] as const) await one(metrics)
  for (let round = 1; round <= rounds; round++) {
    cases = await casesFor(round)
    for (const metrics of round % 2 === 1 ? (["off", "on"] as const) : (["on", "off"] as const)) {
      const { load, cpuUs: spent } = await one(metrics)
      const errors = Object.entries(load.statuses)
        .filter(([status]) => status !== "200")
        .reduce((sum, [, count]) => sum + count, load.socketErrors)
      const cpuUsPerRequest = spent / Math.max(1, load.requests)
      measured.push({ metrics, rps: load.rps, p50Ms: load.p50Ms, p99Ms: load.p99Ms, errors, cpuUsPerRequest })
      log(
        `${store}: round ${round}, metrics ${metrics}: ${load.rps.toFixed(0)} req/s, p99 ${load.p99Ms} ms, ${cpuUsPerRequest.toFixed(0)} µs CPU per request`
      )
    }
  }
  const on = measured.filter((row) => row.metrics === "on")
  const off = measured.filter((row) => row.metrics === "off")
  return {
    store,
    rounds: measured,
    ratio: mean(on.map((row) => row.rps)) / mean(off.map((row) => row.rps)),
    pairedMedianRatio: median(on.map((row, i) => row.rps / off[i]!.rps)),
    cpuRatio: mean(on.map((row) => row.cpuUsPerRequest)) / mean(off.map((row) => row.cpuUsPerRequest)),
    isolatedNsPerRequest: isolatedMetricsWork()
  }
}

export const comparisonReport = (comparison: MetricsComparison): string =>
  [
    `metered cache hit, ${comparison.store}, metrics on vs METRICS=off (alternating rounds)`,
    ...comparison.rounds.map(
      (row, i) =>
        `  ${String(Math.floor(i / 2) + 1).padStart(2)} ${row.metrics.padEnd(3)} ${row.rps.toFixed(0).padStart(7)} req/s  ${row.cpuUsPerRequest.toFixed(0).padStart(5)} µs CPU/request  p50 ${row.p50Ms} ms  p99 ${row.p99Ms} ms${row.errors > 0 ? `  ${row.errors} non-200` : ""}`
    ),
    `  req/s on/off: ${comparison.ratio.toFixed(3)} (means), ${comparison.pairedMedianRatio.toFixed(3)} (median of pairs); the goal is 0.95 or more`,
    `  the service's CPU per request on/off: ${comparison.cpuRatio.toFixed(3)} (means; the goal is 1.05 or less, and it moves less with the machine's load than req/s)`,
    `  the metrics work of one cache hit measured alone: ${comparison.isolatedNsPerRequest.toFixed(0)} ns, ${((comparison.isolatedNsPerRequest / 1000 / mean(comparison.rounds.filter((row) => row.metrics === "off").map((row) => row.cpuUsPerRequest))) * 100).toFixed(2)}% of the CPU a request costs with metrics off`
  ].join("\n")
