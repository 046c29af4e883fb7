import { Result } from "effect"
import { TrialCapExceeded } from "../contract/errors.ts"
import { type Refund, realtimeSurcharge } from "../domain/pricing.ts"
import { recordMeteredCall } from "../observability/metrics.ts"
import type { AnyOperation, Freshness, RunResult } from "../operations/Operation.ts"
import type { CallOutcome } from "./call.ts"
import type { CallResult } from "./receipt.ts"

/**
 * The answer: what a run's result becomes (its stored form, its refunds), and the call's outcome
 * in the metrics and its span.
 */

export const codeOf = (failure: unknown): string =>
  typeof failure === "object" && failure !== null && "code" in failure && typeof failure.code === "string"
    ? failure.code
    : "INTERNAL"

/** Which free budget a refusal says is used up: the shared one, or the IP's of the day (a trial cap naming no parameter). */
const budgetOf = (code: string, failure: unknown): "ip" | "shared" | undefined =>
  code === "BUDGET_EXHAUSTED"
    ? "shared"
    : code === "TRIAL_CAP_EXCEEDED" && failure instanceof TrialCapExceeded && failure.param === undefined
      ? "ip"
      : undefined

/** The call's outcome in the metrics: ok, replayed or its error code, and the credits it charged by source. */
// hot path
export const recordOutcome = <E>(operation: AnyOperation, result: Result.Result<CallOutcome, E>) => {
  if (Result.isFailure(result)) {
    const code = codeOf(result.failure)
    recordMeteredCall(operation.id, operation.platform, code, undefined, budgetOf(code, result.failure))
    return
  }
  const { replayed, receipt } = result.success
  recordMeteredCall(
    operation.id,
    operation.platform,
    replayed ? "replayed" : "ok",
    replayed ? undefined : receipt.funding
  )
}

/** A run's result as its Idempotency-Key stores it: how fresh the data was at `servedAt`. */
export const resultOf = (
  operation: Pick<AnyOperation, "kind">,
  freshness: Freshness,
  result: RunResult,
  servedAt: number
): CallResult => ({
  schema_version: 2,
  kind: operation.kind,
  data: result.data,
  freshness: {
    requested: freshness,
    served: result.served,
    fetched_at: new Date(result.fetchedAt).toISOString(),
    cache_age_seconds: Math.max(0, Math.floor((servedAt - result.fetchedAt) / 1000))
  }
})

/** The operation's own refunds, plus the realtime surcharge when a cached copy had to stand in. */
export const refundsOf = (result: RunResult, freshness: Freshness): ReadonlyArray<Refund> =>
  freshness === "realtime" && result.served === "cached_fallback"
    ? [...result.refunds, { reason: "realtime_fallback", credits: realtimeSurcharge }]
    : result.refunds
