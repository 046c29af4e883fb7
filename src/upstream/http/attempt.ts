import { Clock, Data, type Duration, Effect, Option } from "effect"
import { type HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import type { UpstreamFailure } from "../Upstream.ts"
import { type CallBody, isFailureReason, isObject } from "./wire.ts"

type Reason = UpstreamFailure["reason"]

/** One request's failure, before the provider turns it into an `UpstreamFailure`. */
export class AttemptError extends Data.TaggedError("AttemptError")<{
  readonly reason: Reason
  readonly retryAfterSeconds: number
  /** Another attempt may succeed: the provider was unreachable, slow, overloaded or failing. */
  readonly retryable: boolean
  /** Counts towards opening the circuit; a request the provider rejected as ours to fix does not. */
  readonly unhealthy: boolean
}> {}

/** What a caller is told to wait when the provider does not say. */
export const defaultRetryAfterSeconds: Record<Reason, number> = {
  unreachable: 5,
  timeout: 5,
  error: 5,
  outage: 30,
  paused: 60,
  circuit_open: 1,
  bad_response: 60
}

/** Whole seconds from a `Retry-After` header (delay-seconds or an HTTP date), at least 1. */
export const parseRetryAfter = (header: string | undefined): Effect.Effect<Option.Option<number>> =>
  Effect.gen(function* () {
    const value = header?.trim() ?? ""
    if (/^\d+$/.test(value)) return Option.some(Math.max(1, Number(value)))
    const at = Date.parse(value)
    if (Number.isNaN(at)) return Option.none()
    const now = yield* Clock.currentTimeMillis
    return Option.some(Math.max(1, Math.ceil((at - now) / 1000)))
  })

const fail = (
  reason: Reason,
  flags: { readonly retryable: boolean; readonly unhealthy: boolean },
  after?: number
) =>
  Effect.fail(
    new AttemptError({ reason, retryAfterSeconds: after ?? defaultRetryAfterSeconds[reason], ...flags })
  )

/**
 * An answer outside the contract: not JSON, without `result`, or not the method's declared shape.
 * Asking again will not fix it, but it says the provider is unwell, so it counts towards the circuit.
 */
export const malformed = () => fail("bad_response", { retryable: false, unhealthy: true })

/** 429 and 5xx: the body may name the reason (`{"error": "outage"}`), the header the wait. */
const overloaded = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.gen(function* () {
    const body = yield* Effect.orElseSucceed(response.json, () => undefined)
    const named = isObject(body) && isFailureReason(body.error) ? body.error : "error"
    const after = yield* parseRetryAfter(response.headers["retry-after"])
    return yield* fail(named, { retryable: true, unhealthy: true }, Option.getOrUndefined(after))
  })

const readResponse = (response: HttpClientResponse.HttpClientResponse) => {
  const status = response.status
  if (status === 429 || status >= 500) return overloaded(response)
  // 404 (an unknown method) and other 4xx: our request is wrong, and asking again will not fix it.
  if (status >= 400) return fail("bad_response", { retryable: false, unhealthy: false })
  if (status !== 200) return malformed()
  return response.json.pipe(
    Effect.catch(malformed),
    Effect.flatMap((body) =>
      isObject(body) && Object.hasOwn(body, "result") ? Effect.succeed(body.result) : malformed()
    )
  )
}

/** One `POST` to the provider, bounded by `timeout` from sending the request to reading its body. */
export const attempt = (
  client: HttpClient.HttpClient,
  url: string,
  body: CallBody,
  timeout: Duration.Duration
): Effect.Effect<unknown, AttemptError> =>
  client
    .execute(
      HttpClientRequest.post(url).pipe(HttpClientRequest.acceptJson, HttpClientRequest.bodyJsonUnsafe(body))
    )
    .pipe(
      Effect.catch((error) =>
        fail("unreachable", { retryable: error.reason._tag === "TransportError", unhealthy: true })
      ),
      Effect.flatMap(readResponse),
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => fail("timeout", { retryable: true, unhealthy: true })
      })
    )
