import { Effect, Exit } from "effect"
import { AppConfig } from "../config.ts"
import {
  ConcurrencyLimit,
  IdempotencyKeyRequired,
  IdempotencyKeyReused,
  Internal,
  NotFound,
  PayloadTooLarge
} from "../contract/errors.ts"
import { idempotencyKeyLengthText } from "../contract/idempotencyKey.ts"
import { heartbeatMs } from "../domain/lease.ts"
import { isPaid } from "../domain/plans.ts"
import { windowWords } from "../domain/policy.ts"
import { callsHeld } from "../observability/metrics.ts"
import { refundsOf, resultOf } from "./answer.ts"
import type { Admitted, CallOutcome, Restore } from "./call.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"
import { chargeHolds } from "./invariants.ts"
import { type Reservation, ReservationLost, Reservations } from "./Reservations.ts"
import { envelopeJson, envelopeOf, receiptOf } from "./receipt.ts"
import { rememberResult, replayOf } from "./replay.ts"

/**
 * The full way: claim the Idempotency-Key, reserve the quote with the account's in-flight slot,
 * run the upstream, settle with refunds. What is held is released, fenced by the call's id, when
 * the call does not settle.
 */

/**
 * Claims the Idempotency-Key (or finds its stored result), then reserves the quote. Each is
 * released, fenced by `callId`, if the call then fails: in reverse order, reservation first.
 */
export const hold = Effect.fnUntraced(function* <R>(call: Admitted<R>, callId: string) {
  yield* Effect.acquireRelease(
    Effect.sync(() => callsHeld.count++),
    () => Effect.sync(() => callsHeld.count--)
  )
  const claim = yield* claimKey(call, callId)
  if (claim._tag === "Replay") return claim
  const { input, caller } = call
  const reservations = yield* Reservations
  const reservation = yield* Effect.acquireRelease(
    reservations
      .reserve({
        callId,
        accountId: caller.account.id,
        plan: caller.account.plan,
        keyId: caller.key.id,
        parentKeyId: caller.key.parentKeyId,
        claimed: caller.account.claimed,
        ip: caller.ip,
        operation: call.operation.id,
        quoted: call.quoted,
        realtime: input.freshness === "realtime",
        idempotencyKey: input.idempotencyKey
      })
      .pipe(Effect.catchTag("SqlError", Effect.die)),
    (reservation, exit) =>
      Exit.isSuccess(exit)
        ? Effect.void
        : reservations.release(reservation).pipe(
            Effect.flatMap((released) =>
              released ? Effect.void : Effect.logDebug("reservation already refunded (lease expired)")
            ),
            Effect.ignore
          )
  )
  return { _tag: "Held" as const, reservation }
})

type Claim = { readonly _tag: "Claimed" } | { readonly _tag: "Replay"; readonly outcome: CallOutcome }

const claimKey = Effect.fnUntraced(function* <R>(call: Admitted<R>, callId: string) {
  const { account } = call.caller
  const key = call.input.idempotencyKey
  if (key === undefined) {
    if (!isPaid(account.plan)) return { _tag: "Claimed" } satisfies Claim
    return yield* new IdempotencyKeyRequired({
      message: `Paid keys must send an Idempotency-Key header (${idempotencyKeyLengthText}, a UUID is best) on metered calls.`,
      account: call.who
    })
  }
  const store = yield* IdempotencyStore
  const begun = yield* Effect.acquireRelease(
    Effect.orDie(store.begin(account.id, key, call.fingerprint, callId)),
    (begun, exit) =>
      begun._tag !== "Fresh" || Exit.isSuccess(exit)
        ? Effect.void
        : store.release(account.id, key, callId).pipe(
            Effect.flatMap((released) =>
              released
                ? Effect.void
                : Effect.logDebug("idempotency claim already taken over; left to its new holder")
            ),
            Effect.ignore
          )
  )
  switch (begun._tag) {
    case "Fresh":
      return { _tag: "Claimed" } satisfies Claim
    case "Replay": {
      const receipt = receiptOf(begun.call)
      yield* rememberResult(call, begun.result, receipt)
      return { _tag: "Replay", outcome: replayOf(begun.result, receipt) } satisfies Claim
    }
    case "Reused":
      return yield* new IdempotencyKeyReused({
        message:
          "This Idempotency-Key was already used with other arguments. Use a fresh key for a new call.",
        account: call.who
      })
    case "Running":
      return yield* new ConcurrencyLimit({
        message:
          "The original call with this Idempotency-Key is still running. Retry after retry_after_seconds to get its result.",
        retry_after_seconds: begun.retryAfterSeconds,
        account: call.who
      })
    case "Expired": {
      const { policy } = yield* AppConfig
      return yield* new NotFound({
        message: `The stored result of this Idempotency-Key has expired (results are kept ${windowWords(policy.replayWindowMs)}). Resend with a fresh Idempotency-Key.`,
        account: call.who
      })
    }
  }
})

/**
 * Runs the upstream (the one interruptible step) while the call beats, checks the response size,
 * then settles: the charge and the stored result commit together.
 */
export const runAndSettle = Effect.fnUntraced(function* <R>(
  call: Admitted<R>,
  callId: string,
  reservation: Reservation,
  restore: Restore
) {
  const { input, operation } = call
  const { maxResponseBytes } = yield* AppConfig
  const reservations = yield* Reservations
  // While the upstream runs, the call beats (so a waiting caller knows it is alive), and stops as
  // soon as its reservation is found gone (its lease expired and it was refunded).
  const beating = reservations.heartbeat(callId).pipe(
    Effect.catchTag("SqlError", () => Effect.succeed(true)),
    Effect.delay(heartbeatMs),
    Effect.flatMap((alive) => (alive ? Effect.void : Effect.fail(new ReservationLost({ callId })))),
    Effect.forever
  )
  const run = yield* restore(
    Effect.raceFirst(operation.run(call.args, { freshness: input.freshness }), beating)
  )

  const size = JSON.stringify(run.data).length
  if (size > maxResponseBytes) {
    return yield* new PayloadTooLarge({
      message: `The response would be ${size} bytes, above the ${maxResponseBytes}-byte limit. Ask for less (fewer ids, sections or comments); nothing was charged.`,
      account: call.who
    })
  }

  const result = resultOf(operation, input.freshness, run, reservation.createdAt)
  const resultJson = JSON.stringify(result)
  const key = input.idempotencyKey
  const store = yield* IdempotencyStore
  const settled = yield* reservations
    .settle(reservation, refundsOf(run, input.freshness), () =>
      key === undefined ? Effect.void : store.complete(call.caller.account.id, key, callId, resultJson)
    )
    .pipe(Effect.catchTag("SqlError", Effect.die))
  yield* chargeHolds(settled.receipt)
  yield* rememberResult(call, resultJson, settled.receipt)
  return {
    envelope: envelopeOf(result, settled.receipt),
    receipt: settled.receipt,
    replayed: false,
    json: envelopeJson(resultJson, settled.receipt),
    remaining: settled.remaining
  } satisfies CallOutcome
})

/** A defect once the call has its row: the answer names the call, so it can be reported. */
export const failedWhileHeld = (callId: string, defect: unknown) =>
  Effect.andThen(
    Effect.logError("metered call failed", { callId }, defect),
    Effect.fail(
      new Internal({
        message: `The service failed while running this call (receipt ${callId}); nothing was charged. Retry once; if it fails again, report the receipt id.`,
        receipt_id: callId
      })
    )
  )

/**
 * The call stalled past its lease (a paused process, a hung upstream): its reservation was refunded
 * or its key taken over by a newer call, and it was fenced off. It charged nothing and touched
 * nothing of the newer call's; the same Idempotency-Key, sent again, returns that call's result or
 * runs the call afresh.
 */
export const outlivedLease = (lost: { readonly _tag: string }, callId: string) =>
  Effect.andThen(
    Effect.logWarning(`metered call outlived its lease (${lost._tag}); fenced off, nothing charged`, {
      callId
    }),
    Effect.fail(
      new Internal({
        message: `This call (receipt ${callId}) took longer than its lease and was stopped; nothing was charged. Retry with the SAME Idempotency-Key: you get the result of the call that replaced it, or a fresh run.`,
        receipt_id: callId,
        retry_after_seconds: 1
      })
    )
  )
