import { Clock, Effect, Exit } from "effect"
import { AppConfig } from "../config.ts"
import { ConcurrencyLimit, type ErrorAccount, type Unauthorized } from "../contract/errors.ts"
import { settlement } from "../domain/pricing.ts"
import { Reauthenticate } from "../identity/types.ts"
import { Speculating, type Speculation } from "../services/Cache.ts"
import { refundsOf, resultOf } from "./answer.ts"
import { type Admitted, type CallOutcome, confirmed, type Meter } from "./call.ts"
import { HitCharges } from "./HitCharges.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"
import { chargeHolds } from "./invariants.ts"
import { envelopeJson, envelopeOf } from "./receipt.ts"
import { rememberResult, replayFromMemory } from "./replay.ts"

export const inFlight = (who: ErrorAccount) =>
  new ConcurrencyLimit({
    message:
      "Another call on this account is in flight; one call at a time per account. Retry after retry_after_seconds.",
    retry_after_seconds: 1,
    account: who
  })

/**
 * The cache-hit path. A call for `recent` data with an Idempotency-Key first looks for the key's
 * result in memory (a replay), then runs its operation on stored copies only (`Speculating`):
 * when every copy it needs is there, the data is in hand before any credit moves, and the charge,
 * the receipt and the stored result commit in one statement (`HitCharges`), with no reservation
 * and no lease. `undefined` sends the call the full way: a copy missing, the run failing, or the
 * charge declined (not enough credits, a call in flight, an alert to send, the key already used),
 * since the full path answers each of those.
 */
// hot path
export const chargeIfHit = <R>(
  call: Admitted<R>,
  callId: string,
  meter: Meter
): Effect.Effect<
  CallOutcome | undefined,
  ConcurrencyLimit | Unauthorized | Reauthenticate,
  AppConfig | IdempotencyStore | HitCharges | R
> => {
  const key = call.input.idempotencyKey
  // Anything but a charged hit (a replay, or the full way) confirms the caller first.
  const unlessCharged = (hit: CallOutcome | undefined) =>
    hit !== undefined && !hit.replayed ? Effect.succeed(hit) : Effect.as(confirmed(meter), hit)
  if (key === undefined) return unlessCharged(undefined)
  const { input, operation, caller } = call
  return Effect.flatMap(IdempotencyStore, ({ results: memory }) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const remembered = memory.replay(caller.account.id, key, now)
      if (remembered !== undefined)
        return unlessCharged(
          remembered.fingerprint === call.fingerprint
            ? replayFromMemory(memory, caller.account.id, key, remembered)
            : undefined
        )
      if (!operation.speculative || input.freshness !== "recent" || call.quoted <= 0)
        return unlessCharged(undefined)
      return Effect.flatMap(speculate(call, callId, key, now, meter), unlessCharged)
    })
  )
}

/** The cache hit itself: the run on stored copies, then the one-statement charge. */
// hot path
const speculate = <R>(
  call: Admitted<R>,
  callId: string,
  key: string,
  now: number,
  meter: Meter
): Effect.Effect<
  CallOutcome | undefined,
  ConcurrencyLimit | Unauthorized | Reauthenticate,
  AppConfig | HitCharges | IdempotencyStore | R
> => {
  const { input, operation, caller } = call
  // The charge checks an unconfirmed caller's versions, and so confirms it.
  const pending = meter.unconfirmed
  const speculation: Speculation = { afterCharge: [] }
  return Effect.flatMap(
    Effect.exit(
      operation
        .run(call.args, { freshness: input.freshness })
        .pipe(Effect.provideService(Speculating, speculation))
    ),
    (ran) => {
      if (Exit.isFailure(ran)) return Effect.succeed(undefined)
      const run = ran.value
      return Effect.flatMap(AppConfig, ({ maxResponseBytes }) => {
        const { charged, refunds } = settlement(call.quoted, refundsOf(run, input.freshness))
        const result = resultOf(operation, input.freshness, run, now)
        const stored = JSON.stringify(result)
        // The data is no longer than the whole result; a longer one is measured by the full path.
        if (stored.length > maxResponseBytes) return Effect.succeed(undefined)
        const charging = Effect.flatMap(HitCharges, (hits) =>
          hits.charge({
            callId,
            accountId: caller.account.id,
            keyId: caller.key.id,
            parentKeyId: caller.key.parentKeyId,
            ip: caller.ip,
            operation: operation.id,
            quoted: call.quoted,
            charged,
            refunds,
            idempotencyKey: key,
            fingerprint: call.fingerprint,
            result: stored,
            now,
            versions: pending?.versions
          })
        ).pipe(
          // The statement's fate unknown (a lost connection): the full path finds the key done if it committed.
          Effect.catchTag("SqlError", (error) =>
            Effect.as(
              Effect.logWarning("cache-hit charge failed; the call takes the full path", error),
              undefined
            )
          )
        )
        return Effect.flatMap(
          charging,
          (
            outcome
          ): Effect.Effect<
            CallOutcome | undefined,
            ConcurrencyLimit | Unauthorized | Reauthenticate,
            AppConfig | IdempotencyStore
          > => {
            if (outcome === undefined) return Effect.succeed(undefined)
            if (outcome._tag === "Declined") {
              if (outcome.reason === "pending") return Effect.fail(inFlight(call.who))
              if (outcome.reason === "identity" && pending !== undefined) {
                meter.unconfirmed = undefined
                return Effect.flatMap(pending.reread, (identity) => Effect.fail(new Reauthenticate(identity)))
              }
              return Effect.succeed(undefined)
            }
            meter.unconfirmed = undefined
            const writes = Effect.forEach(
              speculation.afterCharge,
              (write) =>
                write.pipe(
                  Effect.catchCause((cause) => Effect.logWarning("write after a charge failed", cause))
                ),
              { discard: true }
            )
            const envelope = envelopeOf(result, outcome.receipt)
            // The charge committed: its receipt must hold the money path's invariants.
            const checked = Effect.andThen(chargeHolds(outcome.receipt), writes)
            return Effect.as(Effect.andThen(checked, rememberResult(call, stored, outcome.receipt)), {
              envelope,
              receipt: outcome.receipt,
              replayed: false,
              // The data was serialised once, to store it: the answer's JSON is made from that text.
              json: envelopeJson(stored, outcome.receipt),
              remaining: outcome.remaining
            } satisfies CallOutcome)
          }
        )
      })
    }
  )
}
