import { Effect, Result, Tracer } from "effect"
import { Reauthenticate } from "../identity/types.ts"
import type { AnyOperation } from "../operations/Operation.ts"
import { Ids } from "../services/Ids.ts"
import { admit, entitlement, peekRate, takeRateToken } from "./admit.ts"
import { codeOf, recordOutcome } from "./answer.ts"
import {
  type Admitted,
  type CallInput,
  type CallOutcome,
  confirmed,
  type Meter,
  type Metered,
  type MeteredCaller,
  type MeteringError,
  type MeteringServices,
  type Restore
} from "./call.ts"
import { chargeIfHit } from "./hit.ts"
import { failedWhileHeld, hold, outlivedLease, runAndSettle } from "./settle.ts"

export type {
  CallInput,
  CallOutcome,
  Metered,
  MeteredCaller,
  MeteringError,
  MeteringServices,
  RateState
} from "./call.ts"

/**
 * The front door of every data call, REST or MCP: the surface has resolved the caller from its
 * bearer and hands over its decoding of the wire (`input`, run here after entitlement), and gets
 * the outcome or one of the 17 problems back. In order, each once: entitle, decode, admit
 * (Idempotency-Key shape, validate and quote, `max_credits`, trial caps), take a rate token, then
 * either charge a cache hit in one statement, or hold (claim the Idempotency-Key, reserve the
 * quote with the account's in-flight slot), run, settle with refunds; answer with the receipt.
 *
 * What the call holds is released by its own finaliser when the call fails or is interrupted: the
 * rate token when it is turned away before it runs, the claim and the reservation whenever it does
 * not settle. A failed call charges nothing.
 */
// hot path
export const meterDataCall = <R, E>(
  operation: AnyOperation<R>,
  caller: MeteredCaller,
  input: Effect.Effect<CallInput, E>
): Effect.Effect<Metered<E>, never, MeteringServices | R> => {
  const meter: Meter = { rate: undefined, unconfirmed: caller.unconfirmed }
  // Entitle (admit.ts): may this key call this platform at all?
  const refused = entitlement(caller.account, caller.key, operation.platform)
  const call: Effect.Effect<CallOutcome, E | MeteringError | Reauthenticate, MeteringServices | R> =
    refused !== undefined
      ? Effect.fail(refused)
      : // Decode the wire, then admit (admit.ts): validate, quote, max_credits, trial caps.
        Effect.flatMap(input, (decoded) =>
          Effect.flatMap(admit(operation, caller, decoded), (admitted) =>
            Effect.flatMap(
              Effect.flatMap(Ids, (ids) => ids.newId("rcpt")),
              (callId) =>
                // The call's id names its receipt, and fences its claim and its reservation: a call
                // that outlives its lease can neither complete, release nor settle what a newer call
                // holds. From the claim to the settlement nothing may be interrupted but the run.
                Effect.uninterruptibleMask((restore) => metered(admitted, callId, restore, meter)).pipe(
                  Effect.catchTags({
                    ReservationLost: (lost) => outlivedLease(lost, callId),
                    ClaimLost: (lost) => outlivedLease(lost, callId)
                  })
                )
            )
          )
        )
  // Confirm (call.ts): a refusal is answered to a confirmed caller too.
  const confirmedCall = Effect.catch(call, (failure) =>
    failure instanceof Reauthenticate
      ? Effect.fail(failure)
      : Effect.andThen(confirmed(meter), Effect.fail(failure))
  )
  // Answer (answer.ts): start again as the database has the caller, or record the outcome and
  // report the rate limit beside it.
  const answered = Effect.flatMap(
    Effect.result(confirmedCall),
    (attempt): Effect.Effect<Metered<E>, never, MeteringServices | R> => {
      if (Result.isFailure(attempt) && attempt.failure instanceof Reauthenticate)
        return meterDataCall(operation, { ...attempt.failure.identity, ip: caller.ip }, input)
      const result = attempt as Result.Result<CallOutcome, E | MeteringError>
      recordOutcome(operation, result)
      return meter.rate !== undefined
        ? Effect.succeed({ result, rate: meter.rate })
        : Effect.map(peekRate(caller.account), (rate) => ({ result, rate }))
    }
  )
  // A span only when a tracer exports them (OTEL_EXPORTER_OTLP_ENDPOINT): untraced calls pay one check.
  return Effect.withFiber((fiber) =>
    fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer
      ? answered
      : answered.pipe(
          Effect.tap(({ result }) =>
            Result.isSuccess(result)
              ? Effect.annotateCurrentSpan("receipt", result.success.receipt.id)
              : Effect.annotateCurrentSpan("error.code", codeOf(result.failure))
          ),
          Effect.withSpan("meterDataCall", {
            kind: "internal",
            attributes: { operation: operation.id, account: caller.account.id, key: caller.key.id }
          })
        )
  )
}

/**
 * A rate token, then a cache hit, or the full way (claim, reserve, run, settle) in a scope of its
 * own that releases what it holds. The token goes back when the call is turned away before it runs.
 */
// hot path
const metered = <R>(call: Admitted<R>, callId: string, restore: Restore, meter: Meter) =>
  // Take a rate token (admit.ts).
  Effect.flatMap(takeRateToken(call, meter), (token) => {
    const turnedAway = <A, E, R2>(effect: Effect.Effect<A, E, R2>) =>
      Effect.tapError(effect, () =>
        Effect.andThen(
          token.giveBack,
          Effect.sync(() => {
            if (meter.rate !== undefined) meter.rate = { ...meter.rate, remaining: meter.rate.remaining + 1 }
          })
        )
      )
    // Replay from memory or charge a cache hit (replay.ts, hit.ts): a hit holds nothing.
    return Effect.flatMap(turnedAway(chargeIfHit(call, callId, meter)), (hit) =>
      hit !== undefined
        ? Effect.succeed(hit)
        : // The full way (settle.ts): its scope holds the claim and the reservation until it settles.
          Effect.scoped(
            Effect.flatMap(turnedAway(hold(call, callId)), (held) =>
              held._tag === "Replay"
                ? Effect.succeed(held.outcome)
                : runAndSettle(call, callId, held.reservation, restore).pipe(
                    Effect.catchDefect((defect) => failedWhileHeld(callId, defect))
                  )
            )
          )
    )
  })
