import { Context, Metric } from "effect"
import type { Platform } from "../domain/plans.ts"

/**
 * The service's Prometheus metrics (Effect `Metric`, served by `PrometheusMetrics` at `/metrics`).
 * What requests and calls record is a few sync updates of series made once and kept: no Effect,
 * no string building per request. What is read rather than counted (backlogs, pool, memory) is
 * set at each scrape (`./scrape.ts`).
 */

/** Metric updates need a context for the registry and the ambient attributes: the defaults. */
const defaults = Context.empty()

/** `METRICS=off` turns every record below into a no-op (set once, at start-up, by `MetricsPage`). */
const recording = { on: true }
export const setRecording = (on: boolean) => {
  recording.on = on
}

const seconds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

/** The map's entry for `key`, made and kept at first use. */
export const entry = <K, V>(map: Map<K, V>, key: K, make: () => V): V => {
  const found = map.get(key)
  if (found !== undefined) return found
  const made = make()
  map.set(key, made)
  return made
}

/** One series per distinct label values, made at first use. */
const seriesBy = <A>(make: (labels: Record<string, string>) => A) => {
  const made = new Map<string, A>()
  return (key: string, labels: () => Record<string, string>): A => {
    let found = made.get(key)
    if (found === undefined) {
      found = make(labels())
      made.set(key, found)
    }
    return found
  }
}

const requestSeries = seriesBy((attributes) => ({
  count: Metric.counter("svc_http_requests_total", {
    description: "HTTP requests answered, by route template, method and status",
    attributes,
    incremental: true
  }),
  duration: Metric.histogram("svc_http_request_duration_seconds", {
    description: "Time from a request's arrival to its response, by route template, method and status",
    attributes,
    boundaries: seconds
  })
}))

/** Route → method → status → series, so that a request builds no key. */
const requestIndex = new Map<string, Map<string, Map<number, ReturnType<typeof requestSeries>>>>()

// hot path
export const recordRequest = (route: string, method: string, status: number, elapsedSeconds: number) => {
  if (!recording.on) return
  const byStatus = entry(
    entry(requestIndex, route, () => new Map()),
    method,
    () => new Map()
  )
  let series = byStatus.get(status)
  if (series === undefined) {
    series = requestSeries(`${route} ${method} ${status}`, () => ({ route, method, status: String(status) }))
    byStatus.set(status, series)
  }
  series.count.updateUnsafe(1, defaults)
  series.duration.updateUnsafe(elapsedSeconds, defaults)
}

const meteredSeries = seriesBy((attributes) =>
  Metric.counter("svc_metered_calls_total", {
    description: "Metered data calls by operation and outcome (ok, replayed, or the error code)",
    attributes,
    incremental: true
  })
)
const meteredIndex = new Map<string, Map<string, Metric.Counter<number>>>()

const chargedSeries = seriesBy((attributes) =>
  Metric.counter("svc_credits_charged_total", {
    description: "Credits charged, by platform and funding source (free_tier, grant, balance)",
    attributes,
    incremental: true
  })
)

const freeBudgetExhausted = (budget: "ip" | "shared") =>
  Metric.counter("svc_free_budget_exhausted_total", {
    description:
      "Trial calls refused because a free budget was used up: ip (the IP's credits of the day, TRIAL_CAP_EXCEEDED) or shared (the whole free tier's, BUDGET_EXHAUSTED)",
    attributes: { budget },
    incremental: true
  })
const ipBudgetExhausted = freeBudgetExhausted("ip")
const sharedBudgetExhausted = freeBudgetExhausted("shared")

const refusals = seriesBy((attributes) =>
  Metric.counter("svc_limit_refusals_total", {
    description:
      "Calls refused by a limit: rate (per-minute allowance) or concurrency (one in flight per account)",
    attributes,
    incremental: true
  })
)

/** What a metered call's answer says about where its credits came from. */
export interface Charged {
  readonly free_tier: number
  readonly grant: number
  readonly balance: number
}

// hot path
export const recordMeteredCall = (
  operation: string,
  platform: Platform,
  outcome: string,
  funding: Charged | undefined,
  /** The free budget the refusal names, when it is one. */
  exhausted?: "ip" | "shared"
) => {
  if (!recording.on) return
  const byOutcome = entry(meteredIndex, operation, () => new Map())
  let counter = byOutcome.get(outcome)
  if (counter === undefined) {
    counter = meteredSeries(`${operation} ${outcome}`, () => ({ operation, outcome }))
    byOutcome.set(outcome, counter)
  }
  counter.updateUnsafe(1, defaults)
  if (funding !== undefined) {
    if (funding.free_tier > 0) charged(platform, "free_tier").updateUnsafe(funding.free_tier, defaults)
    if (funding.grant > 0) charged(platform, "grant").updateUnsafe(funding.grant, defaults)
    if (funding.balance > 0) charged(platform, "balance").updateUnsafe(funding.balance, defaults)
    return
  }
  if (exhausted !== undefined)
    (exhausted === "ip" ? ipBudgetExhausted : sharedBudgetExhausted).updateUnsafe(1, defaults)
  else if (outcome === "RATE_LIMITED") refusals("rate", () => ({ limit: "rate" })).updateUnsafe(1, defaults)
  else if (outcome === "CONCURRENCY_LIMIT")
    refusals("concurrency", () => ({ limit: "concurrency" })).updateUnsafe(1, defaults)
}

const chargedIndex = new Map<Platform, Map<keyof Charged, Metric.Counter<number>>>()
const charged = (platform: Platform, source: keyof Charged) =>
  entry(
    entry(chargedIndex, platform, () => new Map()),
    source,
    () => chargedSeries(`${platform} ${source}`, () => ({ platform, source }))
  )

const batchSizes = Metric.histogram("svc_hit_charge_batch_size", {
  description: "Cache-hit charges committed together by one group-commit statement",
  boundaries: [1, 2, 4, 8, 16, 32, 64, 128]
})

export const recordHitChargeBatch = (size: number) => {
  if (recording.on) batchSizes.updateUnsafe(size, defaults)
}

const hitChargeWaits = Metric.histogram("svc_hit_charge_wait_seconds", {
  description: "Time a cache hit waited in the group-commit queue before a statement took it",
  boundaries: seconds
})
const hitChargeStatements = Metric.histogram("svc_hit_charge_statement_seconds", {
  description: "Time one group-commit statement took, from its batch taken off the queue to its result",
  boundaries: seconds
})

/**
 * A group-commit statement's timings: each hit's wait in the queue, then the statement itself, so
 * that a slow cache hit can be told apart as the database's (the statement) or the batching's (the
 * wait).
 */
export const recordHitChargeWait = (elapsedSeconds: number) => {
  if (recording.on) hitChargeWaits.updateUnsafe(elapsedSeconds, defaults)
}
export const recordHitChargeStatement = (elapsedSeconds: number) => {
  if (recording.on) hitChargeStatements.updateUnsafe(elapsedSeconds, defaults)
}

const cacheHits = Metric.counter("svc_cache_lookups_total", {
  description:
    "Upstream-copy lookups by result: hit (a young copy served) or miss (fetched live or fallen back)",
  attributes: { result: "hit" },
  incremental: true
})
const cacheMisses = Metric.counter("svc_cache_lookups_total", {
  description:
    "Upstream-copy lookups by result: hit (a young copy served) or miss (fetched live or fallen back)",
  attributes: { result: "miss" },
  incremental: true
})

// hot path
export const recordCacheLookup = (hit: boolean) => {
  if (recording.on) (hit ? cacheHits : cacheMisses).updateUnsafe(1, defaults)
}

const upstreamSeries = seriesBy((attributes) =>
  Metric.counter("svc_upstream_requests_total", {
    description: "Upstream requests by platform and outcome (ok, or the failure's reason)",
    attributes,
    incremental: true
  })
)
const circuitSeries = seriesBy((attributes) =>
  Metric.gauge("svc_upstream_circuit_open", {
    description: "1 while the platform's circuit breaker refuses calls (its last call failed fast), else 0",
    attributes
  })
)

export const recordUpstream = (platform: Platform, outcome: string) => {
  if (!recording.on) return
  upstreamSeries(`${platform} ${outcome}`, () => ({ platform, outcome })).updateUnsafe(1, defaults)
  circuitSeries(platform, () => ({ platform })).updateUnsafe(outcome === "circuit_open" ? 1 : 0, defaults)
}

/** Metered calls of this process holding an Idempotency-Key claim and a reservation (the full path). */
export const callsHeld = { count: 0 }

export const gauge = (name: string, description: string, attributes?: Record<string, string>) => {
  const metric = Metric.gauge(name, { description, ...(attributes === undefined ? {} : { attributes }) })
  return (value: number) => metric.updateUnsafe(value, defaults)
}

const x402Settlements = seriesBy((attributes) =>
  Metric.counter("svc_x402_settlements_total", {
    description:
      "x402 payments by outcome: settled (credited), refused (verification or settlement refused it), replayed (an authorization already credited), unavailable (the facilitator or chain did not answer), reconciled (a settlement whose answer was lost, found on-chain and credited by the reconciler), expired (a settlement that never landed, closed after its authorization expired)",
    attributes,
    incremental: true
  })
)

/** One x402 payment's outcome. */
export const recordX402Settlement = (
  outcome: "settled" | "refused" | "replayed" | "unavailable" | "reconciled" | "expired"
) => {
  if (recording.on) x402Settlements(outcome, () => ({ outcome })).updateUnsafe(1, defaults)
}
