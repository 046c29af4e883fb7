import { Context, Deferred, Effect, Exit, Layer, Option, Queue, Schema } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import type { IdentityVersions } from "../domain/accounts.ts"
import type { Refund } from "../domain/pricing.ts"
import { dayOf } from "../domain/time.ts"
import {
  recordHitChargeBatch,
  recordHitChargeStatement,
  recordHitChargeWait
} from "../observability/metrics.ts"
import { TopupWake } from "../payments/TopupWake.ts"
import { freeTierTerms, Settings } from "../services/Settings.ts"
import { PgliteClient } from "../store/PgliteClient.ts"
import { chargingClient, chargingConnections } from "../store/Pipelined.ts"
import * as Row from "../store/rows.ts"
import type { Remaining } from "./Reservations.ts"
import { CallRow, type Receipt, receiptOf } from "./receipt.ts"

/** A metered call whose data came from stored copies, charged without a reservation. */
export interface HitInput {
  readonly callId: string
  readonly accountId: string
  readonly keyId: string
  /** The key's parent, for a child key: its receipt names it. */
  readonly parentKeyId?: string | undefined
  readonly ip: string
  readonly operation: string
  readonly quoted: number
  readonly charged: number
  readonly refunds: ReadonlyArray<Refund>
  readonly idempotencyKey: string
  readonly fingerprint: string
  /** The call's result as its Idempotency-Key stores it (`CallResult` as JSON). */
  readonly result: string
  readonly now: number
  /**
   * The identity versions of a principal not yet confirmed (`Principal.unconfirmed`): the charge
   * is declined as `identity` unless both are still current.
   */
  readonly versions: IdentityVersions | undefined
}

/**
 * Why a hit was not charged: the full path decides each of these (its errors, its alert, its
 * replay), so nothing here is an answer to the caller. `pending`: another hit of the account is
 * being charged by this instance (the full path then meets its in-flight rule). `identity`: the
 * principal's versions are no longer current (it is read again).
 */
export type HitDeclined =
  | "account"
  | "busy"
  | "key_cap"
  | "credits"
  | "alert"
  | "key"
  | "pending"
  | "identity"

export type HitOutcome =
  | { readonly _tag: "Charged"; readonly receipt: Receipt; readonly remaining: Remaining }
  | { readonly _tag: "Declined"; readonly reason: HitDeclined }

const decodeHits = Row.decoder(
  Schema.Struct({
    call_id: Schema.String,
    outcome: Schema.Literals([
      "charged",
      "account",
      "busy",
      "key_cap",
      "credits",
      "alert",
      "key",
      "identity"
    ]),
    call: Schema.NullOr(CallRow),
    spendable: Row.NullableInt,
    cap_left: Row.NullableInt,
    topup_id: Schema.NullOr(Schema.String)
  }),
  "svc_charge_hits"
)

/**
 * Hits charged by one statement at most, and statements of hits in flight at once, by store.
 * PostgreSQL runs statements side by side, each worker's on a connection of its own (the charging
 * pool, `src/store/Pipelined.ts`), their commits flushed together: small batches keep the database
 * and this process busy at the same time (with 64, 50 connections moved in convoys: one statement of ~35
 * hits, then ~35 answers while the database idled, and the cache hit made 3,641 req/s; with 16,
 * 4,537; 8 with 8 workers: 3,793; 12 with 6: 4,276). PGlite runs one statement at a time on this
 * process's thread, so a second worker only queues behind the first, and a statement costs mostly
 * per statement: one worker charges whatever is waiting, up to 64 (the cache hit 1,434-1,582 req/s
 * against 1,125-1,183 with 16 and 4 workers, 32 and 2: 1,350-1,417; the service's CPU per hit
 * 630-696 µs against 843-887).
 */
const hitBatching = {
  postgres: { batch: 16, workers: chargingConnections },
  pglite: { batch: 64, workers: 1 }
} as const

/**
 * Cache hits charged in one statement each (`svc_charge_hits`: charge, receipt and stored result
 * commit together), and group commit: hits wait in a queue, and each worker charges whatever is
 * waiting (up to a batch) in one statement, so under load many calls share a commit and idle ones
 * wait for none. One hit per account at a time on this instance: a second one is declined at
 * once as `pending` (the database's in-flight rule covers the other instances).
 */
export class HitCharges extends Context.Service<
  HitCharges,
  { readonly charge: (input: HitInput) => Effect.Effect<HitOutcome, SqlError> }
>()("metering/HitCharges") {
  static readonly layer = Layer.effect(
    HitCharges,
    Effect.gen(function* () {
      // A batch is one statement: on PostgreSQL on a connection of the charging pool, one for each worker.
      const sql = yield* chargingClient
      const settings = yield* Settings
      const wake = yield* TopupWake
      const { policy } = yield* AppConfig
      const batching = Option.isSome(yield* Effect.serviceOption(PgliteClient))
        ? hitBatching.pglite
        : hitBatching.postgres
      type Waiting = {
        readonly input: HitInput
        readonly done: Deferred.Deferred<HitOutcome, SqlError>
        /** When it was queued (`performance.now()`), for the wait's metric. */
        readonly queuedAt: number
      }
      // Bound: at most one waiting hit per account (`accountsUnderWay` declines a second at once), so
      // never more than the data calls in flight on this instance; a worker takes up to a batch.
      const waiting = yield* Queue.unbounded<Waiting>()
      const accountsUnderWay = new Set<string>()

      // hot path
      const chargeBatch = (batch: ReadonlyArray<Waiting>) =>
        Effect.flatMap(freeTierTerms(settings, policy.freeCreditsPerIpDay), (terms) => {
          const started = performance.now()
          recordHitChargeBatch(batch.length)
          for (const { queuedAt } of batch) recordHitChargeWait((started - queuedAt) / 1000)
          const items = batch.map(({ input }) => ({
            call_id: input.callId,
            account_id: input.accountId,
            key_id: input.keyId,
            operation: input.operation,
            ip: input.ip,
            day: dayOf(input.now),
            quoted: input.quoted,
            charged: input.charged,
            refunds: JSON.stringify(input.refunds),
            idempotency_key: input.idempotencyKey,
            fingerprint: input.fingerprint,
            response: input.result,
            now: input.now,
            replay_until: input.now + policy.replayWindowMs,
            tombstone_until: input.now + policy.replayWindowMs + policy.tombstoneMs,
            account_version: input.versions?.account,
            key_version: input.versions?.key,
            ...terms
          }))
          return Effect.flatMap(
            Effect.exit(
              sql`SELECT call_id, outcome, call, spendable, cap_left, topup_id FROM svc_charge_hits(${JSON.stringify(items)}::jsonb)`.pipe(
                Effect.flatMap(decodeHits)
              )
            ),
            (exit) =>
              Effect.sync(() => {
                recordHitChargeStatement((performance.now() - started) / 1000)
                if (exit._tag === "Failure") {
                  for (const { done } of batch) Deferred.doneUnsafe(done, Exit.failCause(exit.cause))
                  return
                }
                // A top-up a hit armed wakes the top-up worker (a dropping queue: never blocks).
                for (const row of exit.value) if (row.topup_id !== null) Queue.offerUnsafe(wake, row.topup_id)
                const byId = new Map(exit.value.map((row) => [row.call_id, row]))
                for (const { input, done } of batch) {
                  const row = byId.get(input.callId)
                  const outcome: HitOutcome =
                    row === undefined
                      ? { _tag: "Declined", reason: "account" }
                      : row.outcome === "charged" && row.call !== null
                        ? {
                            _tag: "Charged",
                            receipt: receiptOf(row.call, false, input.parentKeyId),
                            remaining: { credits: row.spendable ?? 0, keyCap: row.cap_left ?? undefined }
                          }
                        : { _tag: "Declined", reason: row.outcome === "charged" ? "account" : row.outcome }
                  Deferred.doneUnsafe(done, Exit.succeed(outcome))
                }
              })
          )
        })
      for (let worker = 0; worker < batching.workers; worker++) {
        yield* Effect.forkScoped(
          Effect.forever(Effect.flatMap(Queue.takeBetween(waiting, 1, batching.batch), chargeBatch))
        )
      }

      // hot path
      const charge = (input: HitInput): Effect.Effect<HitOutcome, SqlError> => {
        if (accountsUnderWay.has(input.accountId))
          return Effect.succeed({ _tag: "Declined", reason: "pending" })
        accountsUnderWay.add(input.accountId)
        // Offering never waits: the queue's bound is one hit per account (above).
        const done = Deferred.makeUnsafe<HitOutcome, SqlError>()
        Queue.offerUnsafe(waiting, { input, done, queuedAt: performance.now() })
        return Effect.ensuring(
          Deferred.await(done),
          Effect.sync(() => accountsUnderWay.delete(input.accountId))
        )
      }
      return HitCharges.of({ charge })
    })
  )
}
