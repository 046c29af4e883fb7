import { Clock, Context, Data, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig, links } from "../config.ts"
import {
  BudgetExhausted,
  ConcurrencyLimit,
  type ErrorAccount,
  InsufficientCredits,
  TrialCapExceeded
} from "../contract/errors.ts"
import { upgradeUrl } from "../contract/problem.ts"
import { type CapPeriod, capResetsAtIso } from "../domain/keyLimits.ts"
import { retryAfterSeconds } from "../domain/lease.ts"
import { freeBudgetClause, type Plan } from "../domain/plans.ts"
import { type Refund, settlement } from "../domain/pricing.ts"
import { dayOf } from "../domain/time.ts"
import { TopupWake } from "../payments/TopupWake.ts"
import { alertMail } from "../services/mail/messages.ts"
import { Outbox } from "../services/mail/Outbox.ts"
import { freeTierTerms, Settings, type Terms } from "../services/Settings.ts"
import { WebhookEvents } from "../services/WebhookEvents.ts"
import { capResetsAt, keyCapMessage } from "./capRefusal.ts"
import { type Funding, type Receipt, receiptOf } from "./receipt.ts"
import { decodeCallIds, decodeCapReached, decodeReserved, decodeSettled } from "./reservationRows.ts"

/** A call holding its reserved quote and its account's in-flight slot. */
export interface Reservation {
  readonly callId: string
  readonly accountId: string
  readonly operation: string
  /** The key's parent, for a child key: its receipt names it. */
  readonly parentKeyId?: string | undefined
  readonly quoted: number
  /** Where the quote was drawn from (the database's funding order decided). */
  readonly reserved: Funding
  readonly idempotencyKey: string | undefined
  readonly createdAt: number
}

export interface ReserveInput {
  /** The call's id: its receipt id once settled, and the token that fences its reservation and claim. */
  readonly callId: string
  readonly accountId: string
  readonly plan: Plan
  readonly keyId: string
  readonly parentKeyId?: string | undefined
  /** Whether the account has an owner (its trial's free budget spent, claiming it is the next step). */
  readonly claimed?: boolean | undefined
  readonly ip: string
  readonly operation: string
  readonly quoted: number
  readonly realtime: boolean
  readonly idempotencyKey: string | undefined
}

export type ReserveError = ConcurrencyLimit | InsufficientCredits | TrialCapExceeded | BudgetExhausted

/**
 * The reservation is no longer this call's: its lease expired and it was refunded (by the sweeper
 * or by the account's next call) before it could settle. The call charges nothing.
 */
export class ReservationLost extends Data.TaggedError("ReservationLost")<{ readonly callId: string }> {}

/** What an account and a key have left after a charge (Credits-Remaining, Key-Cap-Remaining). */
export interface Remaining {
  readonly credits: number
  /** Undefined for a key without a cap (nor a capped parent). */
  readonly keyCap: number | undefined
}

/** A settled call: its receipt, and what is left. */
export interface Settled {
  readonly receipt: Receipt
  readonly remaining: Remaining
}

/**
 * The full path's ledger moves of a metered call: reserve the whole quote (taking the account's
 * one in-flight slot), settle at most the quote (or release it all), beat while running, and sweep
 * the reservations of dead calls. The rules (funding order, busy, alert crossing) are the
 * database's functions (migrations/functions.sql); this service calls them and turns their
 * outcomes into problems and mail.
 */
export class Reservations extends Context.Service<
  Reservations,
  {
    readonly reserve: (input: ReserveInput) => Effect.Effect<Reservation, ReserveError | SqlError>
    /**
     * Charges the quote less the refunds; `alsoInTransaction` commits with it (the stored result),
     * and its failure rolls the charge back. A reservation already refunded is ReservationLost.
     */
    readonly settle: <E>(
      reservation: Reservation,
      refunds: ReadonlyArray<Refund>,
      alsoInTransaction: (receipt: Receipt) => Effect.Effect<void, E>
    ) => Effect.Effect<Settled, SqlError | ReservationLost | E>
    /** Returns every reserved credit; the call is charged nothing. False when it was already finished. */
    readonly release: (reservation: Reservation) => Effect.Effect<boolean, SqlError>
    /** A live call shows it is alive (see `domain/lease.ts`); false once its reservation is gone. */
    readonly heartbeat: (callId: string) => Effect.Effect<boolean, SqlError>
    /** Releases reservations whose lease expired (their holder died); returns how many. */
    readonly sweepExpired: Effect.Effect<number, SqlError>
  }
>()("metering/Reservations") {
  static readonly layer = Layer.effect(
    Reservations,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox
      const events = yield* WebhookEvents
      const wake = yield* TopupWake
      const settings = yield* Settings
      const config = yield* AppConfig
      const { leaseMs, policy } = config

      /**
       * Ends a reserved call inside the caller's transaction, and queues the balance alert's email
       * and `balance.low` event when this charge crossed it. Undefined when the call was no longer
       * reserved. A top-up the charge armed wakes this instance's top-up worker.
       */
      const finish = (
        callId: string,
        charged: number,
        refunds: ReadonlyArray<Refund>,
        now: number,
        terms: Terms | null = null,
        parentKeyId: string | undefined = undefined
      ) =>
        Effect.gen(function* () {
          const [ended] =
            yield* sql`SELECT call, alert_email, alert_threshold, alert_spendable, spendable, cap_left, topup_id
            FROM svc_settle(${callId}, ${charged}, ${JSON.stringify(refunds)}, ${now},
              ${terms === null ? null : JSON.stringify(terms)}::jsonb)`.pipe(Effect.flatMap(decodeSettled))
          if (ended === undefined) return undefined
          if (ended.alert_threshold !== null && ended.alert_spendable !== null) {
            if (ended.alert_email !== null)
              yield* outbox.enqueue(
                alertMail({
                  to: ended.alert_email,
                  accountId: ended.call.account_id,
                  threshold: ended.alert_threshold,
                  spendable: ended.alert_spendable,
                  upgradeUrl: upgradeUrl(config.upgradeUrl, ended.call.account_id)
                })
              )
            yield* events.emit(ended.call.account_id, "balance.low", {
              threshold: ended.alert_threshold,
              spendable_credits: ended.alert_spendable,
              receipt_id: ended.call.id
            })
          }
          yield* TopupWake.armed(wake, ended.topup_id)
          return {
            receipt: receiptOf(ended.call, false, parentKeyId),
            remaining: { credits: ended.spendable ?? 0, keyCap: ended.cap_left ?? undefined }
          } satisfies Settled
        })

      /** Refunds the account's dead calls, each in its own transaction, as the sweeper does. */
      const sweepAccount = (accountId: string, now: number) =>
        Effect.gen(function* () {
          const expired = yield* sql`SELECT id FROM calls
            WHERE account_id = ${accountId} AND state = 'reserved' AND lease_expires_at <= ${now}`.pipe(
            Effect.flatMap(decodeCallIds)
          )
          for (const row of expired) yield* sql.withTransaction(finish(row.id, 0, [], now))
        })

      /**
       * A call refused by a key's cap: the cap is reached. Its `key.cap_reached` event is queued
       * once per key, period and cap (`key_cap_events` decides), whichever refusal comes first.
       */
      const capReached = (keyId: string, now: number) =>
        sql.withTransaction(
          Effect.gen(function* () {
            const [reached] =
              yield* sql`INSERT INTO key_cap_events (key_id, period, spend_cap_credits, reached_at)
              SELECT c.cap_key, svc_period(c.cap_period, ${dayOf(now)}), k.spend_cap_credits, ${now}
              FROM svc_key_cap(${keyId}, ${dayOf(now)}) c JOIN api_keys k ON k.id = c.cap_key
              WHERE c.cap_key IS NOT NULL
              ON CONFLICT DO NOTHING
              RETURNING key_id, period, spend_cap_credits,
                (SELECT a.account_id FROM api_keys a WHERE a.id = key_id) AS account_id`.pipe(
                Effect.flatMap(decodeCapReached)
              )
            if (reached === undefined) return
            const period = reached.period.split(":")[0] as CapPeriod
            yield* events.emit(reached.account_id, "key.cap_reached", {
              key_id: keyId,
              cap_key_id: reached.key_id,
              spend_cap_credits: reached.spend_cap_credits,
              cap_period: period,
              cap_resets_at: capResetsAtIso(period, now) ?? null
            })
          })
        )

      const reserve = Effect.fn("Reservations.reserve")(function* (input: ReserveInput) {
        const now = yield* Clock.currentTimeMillis
        const terms = yield* freeTierTerms(settings, policy.freeCreditsPerIpDay)
        const account: ErrorAccount = { accountId: input.accountId, plan: input.plan }
        const attempt = (afterSweep: boolean) =>
          sql`SELECT * FROM svc_reserve(${JSON.stringify({
            call_id: input.callId,
            account_id: input.accountId,
            key_id: input.keyId,
            ip: input.ip,
            day: dayOf(now),
            operation: input.operation,
            quoted: input.quoted,
            realtime: input.realtime,
            idempotency_key: input.idempotencyKey ?? null,
            now,
            lease_ms: leaseMs,
            after_sweep: afterSweep,
            ...terms
          })}::jsonb)`.pipe(Effect.flatMap(decodeReserved))
        let [found] = yield* attempt(false)
        // A dead holder's lease blocks the slot: refund it in transactions of its own (the lock order
        // of a reservation must not be broken by another IP's rows), then try once more.
        if (found?.outcome === "expired") {
          yield* sweepAccount(input.accountId, now)
          ;[found] = yield* attempt(true)
        }
        const available = found?.available ?? 0
        switch (found?.outcome) {
          case "reserved":
            return {
              callId: input.callId,
              accountId: input.accountId,
              operation: input.operation,
              parentKeyId: input.parentKeyId,
              quoted: input.quoted,
              reserved: {
                free_tier: found.reserved_free ?? 0,
                grant: found.reserved_grant ?? 0,
                balance: found.reserved_balance ?? 0
              },
              idempotencyKey: input.idempotencyKey,
              createdAt: now
            } satisfies Reservation
          case "busy":
          case "expired":
            return yield* new ConcurrencyLimit({
              message:
                "Another call on this account is in flight; one call at a time per account. Retry after retry_after_seconds.",
              retry_after_seconds: retryAfterSeconds(
                { leaseExpiresAt: found.holder_lease ?? now, lastSeenAt: found.holder_seen ?? now },
                now
              ),
              account
            })
          case "key_cap":
            yield* capReached(input.keyId, now)
            return yield* new InsufficientCredits({
              message: keyCapMessage(input, found.cap_period, found.cap_left ?? 0, config.baseUrl),
              credits_required: input.quoted,
              credits_available: found.cap_left ?? 0,
              limit: "key_cap",
              ...capResetsAt(found.cap_period, now),
              account
            })
          case "budget":
            return yield* new BudgetExhausted({
              message:
                "The shared free-tier budget is used up or closed for today. Buy a pack to keep calling; cached data still serves paid keys.",
              account
            })
          case "trial_cap":
            return yield* new TrialCapExceeded({
              message: `${freeBudgetClause(policy.freeCreditsPerIpDay)}; ${found.free_left ?? 0} are left and this call is quoted ${input.quoted}. ${
                input.claimed === false
                  ? `Claim this account at claim_url (sign in with this key) for ${policy.claimGrantCredits.toLocaleString("en-US")} free credits, then retry with a fresh Idempotency-Key; or buy a pack at upgrade_url, or wait for the UTC day to roll over.`
                  : "Wait for the UTC day to roll over or buy a pack."
              }`,
              ...(input.claimed === false
                ? { claim_url: `${links(config.baseUrl).claim}?account=${input.accountId}` }
                : {}),
              account
            })
          default:
            // 'credits', and an account gone since its key was read (nothing to draw from).
            return yield* new InsufficientCredits({
              message: `This call is quoted ${input.quoted} credits and the account can cover ${available}. Buy a pack at upgrade_url, then retry with the SAME Idempotency-Key.`,
              credits_required: input.quoted,
              credits_available: available,
              account
            })
        }
      })

      const settle = <E>(
        reservation: Reservation,
        refunds: ReadonlyArray<Refund>,
        alsoInTransaction: (receipt: Receipt) => Effect.Effect<void, E>
      ) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const { charged, refunds: kept } = settlement(reservation.quoted, refunds)
          const terms = yield* freeTierTerms(settings, policy.freeCreditsPerIpDay)
          return yield* sql.withTransaction(
            Effect.gen(function* () {
              const settled = yield* finish(
                reservation.callId,
                charged,
                kept,
                now,
                terms,
                reservation.parentKeyId
              )
              if (settled === undefined) return yield* new ReservationLost({ callId: reservation.callId })
              yield* alsoInTransaction(settled.receipt)
              return settled
            })
          )
        }).pipe(Effect.withSpan("Reservations.settle"))

      const release = Effect.fn("Reservations.release")(function* (reservation: Reservation) {
        const now = yield* Clock.currentTimeMillis
        const finished = yield* sql.withTransaction(finish(reservation.callId, 0, [], now))
        return finished !== undefined
      })

      const heartbeat = Effect.fn("Reservations.heartbeat")(function* (callId: string) {
        const now = yield* Clock.currentTimeMillis
        const beaten = yield* sql`UPDATE calls SET heartbeat_at = ${now}
          WHERE id = ${callId} AND state = 'reserved' RETURNING id`
        return beaten.length > 0
      })

      const sweepExpired = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const expired = yield* sql`SELECT id FROM calls
          WHERE state = 'reserved' AND lease_expires_at <= ${now} LIMIT 500`.pipe(
          Effect.flatMap(decodeCallIds)
        )
        for (const row of expired) yield* sql.withTransaction(finish(row.id, 0, [], now))
        return expired.length
      }).pipe(Effect.withSpan("Reservations.sweepExpired"))

      return Reservations.of({ reserve, settle, release, heartbeat, sweepExpired })
    })
  )
}
