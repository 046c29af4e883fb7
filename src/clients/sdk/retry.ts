import type { HttpClientRequest } from "effect/http"

/** How a call is retried: attempts in all (1 = never retry), and the backoff's base and ceiling. */
export interface RetryPolicy {
  readonly maxAttempts: number
  readonly baseDelayMs: number
  /** A `retry_after_seconds` longer than this is not waited for: the call fails with its error. */
  readonly maxDelayMs: number
}

export const defaultRetryPolicy: RetryPolicy = { maxAttempts: 4, baseDelayMs: 250, maxDelayMs: 30_000 }

/** The problems that say "nothing was done, try again later" (`is_retriable` in the catalogue). */
const retriableTags = new Set(["ConcurrencyLimit", "RateLimited", "UpstreamUnavailable", "Internal"])

/** Refused before anything ran, so safe to resend even when the request itself is not idempotent. */
const refusedTags = new Set(["ConcurrencyLimit", "RateLimited"])

const tagOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : undefined

/** A connection that failed or dropped before an answer came back (the call may or may not have run). */
const isTransportFailure = (error: unknown) =>
  tagOf(error) === "HttpClientError" &&
  tagOf((error as { readonly reason?: unknown }).reason) === "TransportError"

/**
 * Whether a failed attempt is worth another: data calls carry an Idempotency-Key (and GETs are
 * safe), so they are resent on any retriable problem or a dropped connection; other requests only
 * when the service refused them before doing anything.
 */
export const isRetriable = (error: unknown, request: HttpClientRequest.HttpClientRequest | undefined) => {
  const tag = tagOf(error)
  const safeToResend =
    request === undefined || request.method === "GET" || "idempotency-key" in request.headers
  if (tag !== undefined && refusedTags.has(tag)) return true
  if (!safeToResend) return false
  return (tag !== undefined && retriableTags.has(tag)) || isTransportFailure(error)
}

/**
 * The wait before attempt `attempt + 1` (0-based `attempt` just failed), or undefined to stop:
 * at least the server's `retry_after_seconds`, plus a jittered exponential share so that clients
 * told the same number do not all come back at once. `random` is in [0, 1).
 */
export const retryDelayMs = (
  policy: RetryPolicy,
  attempt: number,
  retryAfterSeconds: number | undefined,
  random: number
): number | undefined => {
  if (attempt + 1 >= policy.maxAttempts) return undefined
  const floor = (retryAfterSeconds ?? 0) * 1000
  if (floor > policy.maxDelayMs) return undefined
  const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt)
  const jittered = retryAfterSeconds === undefined ? backoff * (0.5 + random / 2) : floor + backoff * random
  return Math.min(policy.maxDelayMs, Math.round(jittered))
}

export const retryAfterOf = (error: unknown): number | undefined => {
  const value = (error as { readonly retry_after_seconds?: unknown } | undefined)?.retry_after_seconds
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined
}
