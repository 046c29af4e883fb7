import { Clock, Context, Data, Deferred, Effect, Exit, Layer, Queue, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import {
  BudgetExhausted,
  ConcurrencyLimit,
  InsufficientCredits,
  TrialCapExceeded
} from "../contract/errors.ts"
import { upgradeUrl } from "../contract/problem.ts"
import { draw, type Funding, split, total } from "../domain/funding.ts"
import { mailboxOf } from "../domain/identity.ts"
import { retryAfterSeconds } from "../domain/lease.ts"
import type { Pack, Plan } from "../domain/plans.ts"
import type { Refund, RefundReason } from "../domain/pricing.ts"
import { dayOf } from "../domain/time.ts"
import { alertMail } from "../mail/messages.ts"
import { Outbox } from "../mail/Outbox.ts"
import * as Row from "../store/rows.ts"
import { Ids } from "./Ids.ts"
import { KeyMemory } from "./KeyMemory.ts"
import { Settings } from "./Settings.ts"

export type { Funding }

export interface Reservation {
  readonly callId: string
  readonly accountId: string
  readonly ip: string
  readonly day: number
  readonly operation: string
  readonly quoted: number
  readonly reserved: Funding
  readonly idempotencyKey: string | undefined
  readonly createdAt: number
  /** The balance alert's threshold when it was armed at reservation (a charge may cross it). */
  readonly alertThreshold: number | undefined
}

export interface Receipt {
  readonly id: string
  readonly operation: string
  readonly quoted: number
  readonly charged: number
  readonly refunds: ReadonlyArray<Refund>
  readonly funding: Funding
  readonly idempotency_key: string | null
  readonly replayed: boolean
  readonly created_at: string
  /** The connected app (OAuth) the call was made through: its app id is the call's key. */
  readonly app_id?: string
}

export interface ReserveInput {
  /** The call's id: its receipt id once settled, and the token that fences its reservation and claim. */
  readonly callId: string
  readonly accountId: string
  readonly plan: Plan
  readonly keyId: string
  readonly ip: string
  readonly operation: string
  readonly quoted: number
  readonly realtime: boolean
  readonly idempotencyKey: string | undefined
}

/** A metered call whose data came from stored copies, charged without a reservation. */
export interface HitInput {
  readonly callId: string
  readonly accountId: string
  readonly keyId: string
  readonly ip: string
  readonly operation: string
  readonly quoted: number
  readonly charged: number
  readonly refunds: ReadonlyArray<Refund>
  readonly idempotencyKey: string
  readonly fingerprint: string
  /** The stored idempotent result around its receipt's funding, which the charge decides. */
  readonly head: string
  readonly tail: string
  readonly now: number
}

/**
 * Why a hit was not charged: the full path decides each of these (its errors, its alert, its
 * replay), so nothing here is an answer to the caller.
 */
export type HitDeclined = "account" | "busy" | "credits" | "alert" | "key"

export type HitOutcome =
  | { readonly _tag: "Charged"; readonly receipt: Receipt }
  | { readonly _tag: "Declined"; readonly reason: HitDeclined }

export interface CreditInput {
  readonly accountId: string
  readonly credits: number
  readonly kind: "balance" | "grant"
  readonly reason: string
}

export interface PurchaseInput {
  readonly accountId: string
  readonly pack: Pack
  readonly rail: string
  readonly paymentRef: string
  /** The end of the paid period, for a subscription. */
  readonly periodEnd?: number | undefined
}

export type ReserveError = ConcurrencyLimit | InsufficientCredits | TrialCapExceeded | BudgetExhausted

/** Signals, inside a reservation, that the account's slot is held by a dead call. */
class LeaseExpired extends Data.TaggedError("LeaseExpired") {}

/**
 * The reservation is no longer this call's: its lease expired and it was refunded (by the sweeper
 * or by the account's next call) before it could settle. The call charges nothing.
 */
export class ReservationLost extends Data.TaggedError("ReservationLost")<{ readonly callId: string }> {}

const RefundRow = Schema.Struct({
  reason: Schema.Literals([
    "realtime_fallback",
    "domain_resolved_before",
    "fewer_results"
  ] satisfies ReadonlyArray<RefundReason>),
  credits: Row.Int
})

/** A row of `calls`: a reservation while `reserved`, a receipt once `settled`. */
export const CallRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  key_id: Schema.String,
  operation: Schema.String,
  state: Schema.Literals(["reserved", "settled", "released"]),
  ip: Schema.String,
  day: Row.Int,
  quoted: Row.Int,
  reserved_free: Row.Int,
  reserved_grant: Row.Int,
  reserved_balance: Row.Int,
  charged: Row.Int,
  charged_free: Row.Int,
  charged_grant: Row.Int,
  charged_balance: Row.Int,
  refunds: Schema.fromJsonString(Schema.Array(RefundRow)),
  idempotency_key: Schema.NullOr(Schema.String),
  created_at: Row.Int
})
export type CallRow = typeof CallRow.Type

const decodeCalls = Row.decoder(CallRow, "calls")
const decodeCallIds = Row.decoder(Schema.Struct({ id: Schema.String }), "calls.id")
const decodeFunds = Row.decoder(
  Schema.Struct({
    grant_credits: Row.Int,
    balance_credits: Row.Int,
    alert_threshold: Row.Int,
    alert_armed: Schema.Boolean
  }),
  "accounts (credits)"
)
const decodeCrossings = Row.decoder(
  Schema.Struct({ email: Schema.NullOr(Schema.String), alert_threshold: Row.Int, spendable: Row.Int }),
  "accounts (alert crossing)"
)
const decodeHolders = Row.decoder(
  Schema.Struct({ lease_expires_at: Row.Int, created_at: Row.Int, heartbeat_at: Row.NullableInt }),
  "calls (in flight)"
)
const decodeFreeUse = Row.decoder(Schema.Struct({ credits_used: Row.Int }), "free tier (credits used)")
const decodeHits = Row.decoder(
  Schema.Struct({
    call_id: Schema.String,
    outcome: Schema.Literals(["charged", "account", "busy", "credits", "alert", "key"]),
    from_grant: Row.Int,
    from_balance: Row.Int
  }),
  "svc_charge_hits"
)
type HitRow = Effect.Success<ReturnType<typeof decodeHits>>[number]

/** Hits charged by one statement at most; and statements of hits in flight at once. */
const hitBatch = 64
const hitWorkers = 4

/** What a reserved call holds, as finishing it needs it. */
type Held = Pick<Reservation, "callId" | "accountId" | "ip" | "day" | "reserved">

const heldOf = (row: CallRow): Held => ({
  callId: row.id,
  accountId: row.account_id,
  ip: row.ip,
  day: row.day,
  reserved: { free_tier: row.reserved_free, grant: row.reserved_grant, balance: row.reserved_balance }
})

export const receiptOf = (row: CallRow, replayed = false): Receipt => ({
  id: row.id,
  operation: row.operation,
  quoted: row.quoted,
  charged: row.charged,
  refunds: row.refunds,
  funding: { free_tier: row.charged_free, grant: row.charged_grant, balance: row.charged_balance },
  idempotency_key: row.idempotency_key,
  replayed,
  created_at: new Date(row.created_at).toISOString(),
  ...(row.key_id.startsWith("app_") ? { app_id: row.key_id } : {})
})

/**
 * The credit ledger. A call reserves its whole quote (free budget, then grant, then balance) in
 * one transaction that also takes the account's in-flight slot; settlement charges at most the
 * quote and returns the rest to where it came from. Lock order everywhere: account, call, the
 * IP's free-tier row, the day's free-tier row, so concurrent transactions cannot deadlock.
 */
export class Ledger extends Context.Service<
  Ledger,
  {
    readonly reserve: (input: ReserveInput) => Effect.Effect<Reservation, ReserveError | SqlError>
    /**
     * Charges the quote less the refunds; `alsoInTransaction` commits with it (the idempotent
     * result), and its failure rolls the charge back. A reservation already refunded is ReservationLost.
     */
    readonly settle: <E>(
      reservation: Reservation,
      refunds: ReadonlyArray<Refund>,
      alsoInTransaction: (receipt: Receipt) => Effect.Effect<void, E>
    ) => Effect.Effect<Receipt, SqlError | ReservationLost | E>
    /**
     * Charges a cache hit of a paid account in one statement, with its receipt and its stored
     * idempotent result; concurrent hits share one statement and one commit (group commit).
     */
    readonly chargeHit: (input: HitInput) => Effect.Effect<HitOutcome, SqlError>
    /**
     * Accounts with a cache hit being charged on this instance: a second call of the account at
     * that moment is CONCURRENCY_LIMIT, as it would be against a reservation.
     */
    readonly hitsUnderWay: Set<string>
    /** Returns every reserved credit; the call is charged nothing. False when it was already finished. */
    readonly release: (reservation: Reservation) => Effect.Effect<boolean, SqlError>
    /**
     * Adds credits to an account's grant or purchased balance, with the credit event that is the
     * other side of every debit (operator credit, claim grant, purchase). False: no such account.
     */
    readonly credit: (input: CreditInput) => Effect.Effect<boolean, SqlError>
    /**
     * The one-time claim grant for an account, its owner's email and a key: once per mailbox
     * (`mailboxOf`: `farm+1@` and `f.arm@gmail.com` are `farm@`'s) and once per key (the database's
     * unique constraints decide, also under concurrent sign-ins).
     * Returns the credits granted, 0 when either already had it. Joins the caller's transaction.
     */
    readonly grantOnce: (input: {
      readonly accountId: string
      readonly email: string
      readonly keyId: string
    }) => Effect.Effect<number, SqlError>
    /**
     * Credits one payment exactly once: a one-time pack, or one paid period of a subscription.
     * `paymentRef` names the payment on its rail; a second report of it (a double click, a webhook
     * delivered three times, two instances at once) finds it recorded and changes nothing. Sets
     * the pack's plan (`flex` never lowers `production`). Joins the caller's transaction. Returns
     * whether this call applied it.
     */
    readonly applyPurchase: (input: PurchaseInput) => Effect.Effect<boolean, SqlError>
    /** A live call shows it is alive (see `domain/lease.ts`); false once its reservation is gone. */
    readonly heartbeat: (callId: string) => Effect.Effect<boolean, SqlError>
    /** Releases reservations whose lease expired (their holder died); returns how many. */
    readonly sweepExpired: Effect.Effect<number, SqlError>
    readonly receipts: (
      accountId: string,
      options: {
        readonly limit: number
        readonly before?: { readonly createdAt: number; readonly id: string } | undefined
      }
    ) => Effect.Effect<ReadonlyArray<Receipt & { readonly createdAtMs: number }>, SqlError>
    readonly receipt: (accountId: string, id: string) => Effect.Effect<Receipt | undefined, SqlError>
  }
>()("app/Ledger") {
  static readonly layer = Layer.effect(
    Ledger,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const settings = yield* Settings
      const ids = yield* Ids
      const outbox = yield* Outbox
      const keyMemory = yield* KeyMemory
      const { leaseMs, policy, upgradeUrl: upgradeBase } = yield* AppConfig

      // Group commit: hits wait in a queue; each worker charges whatever is waiting (up to a batch)
      // in one statement, so under load many calls share a commit and idle ones wait for none.
      type Waiting = { readonly input: HitInput; readonly done: Deferred.Deferred<HitOutcome, SqlError> }
      const hits = yield* Queue.unbounded<Waiting>()
      const outcomeOf = (input: HitInput, row: HitRow | undefined): HitOutcome =>
        row === undefined
          ? { _tag: "Declined", reason: "account" }
          : row.outcome !== "charged"
            ? { _tag: "Declined", reason: row.outcome }
            : {
                _tag: "Charged",
                receipt: {
                  id: input.callId,
                  operation: input.operation,
                  quoted: input.quoted,
                  charged: input.charged,
                  refunds: input.refunds,
                  funding: { free_tier: 0, grant: row.from_grant, balance: row.from_balance },
                  idempotency_key: input.idempotencyKey,
                  replayed: false,
                  created_at: new Date(input.now).toISOString(),
                  ...(input.keyId.startsWith("app_") ? { app_id: input.keyId } : {})
                }
              }
      // Chained, not a generator: the batch's results (each ~5 KB) are held while the statement
      // runs, and a generator suspended meanwhile would have them promoted (README).
      const chargeBatch = (batch: ReadonlyArray<Waiting>) => {
        const items = batch.map(({ input }) => ({
          id: input.callId,
          account_id: input.accountId,
          key_id: input.keyId,
          operation: input.operation,
          ip: input.ip,
          day: dayOf(input.now),
          quoted: input.quoted,
          charged: input.charged,
          refunds: JSON.stringify(input.refunds),
          idem_key: input.idempotencyKey,
          fingerprint: input.fingerprint,
          now: input.now,
          replay_until: input.now + policy.replayWindowMs,
          tombstone_until: input.now + policy.replayWindowMs + policy.tombstoneMs,
          head: input.head,
          tail: input.tail
        }))
        return Effect.flatMap(
          Effect.exit(
            sql`SELECT call_id, outcome, from_grant, from_balance FROM svc_charge_hits(${JSON.stringify(items)}::jsonb)`.pipe(
              Effect.flatMap(decodeHits)
            )
          ),
          (exit) =>
            Effect.sync(() => {
              if (exit._tag === "Failure") {
                for (const { done } of batch) Deferred.doneUnsafe(done, Exit.failCause(exit.cause))
                return
              }
              const byId = new Map(exit.value.map((row) => [row.call_id, row]))
              for (const { input, done } of batch)
                Deferred.doneUnsafe(done, Exit.succeed(outcomeOf(input, byId.get(input.callId))))
            })
        )
      }
      for (let worker = 0; worker < hitWorkers; worker++) {
        yield* Effect.forkScoped(
          Effect.forever(Effect.flatMap(Queue.takeBetween(hits, 1, hitBatch), chargeBatch))
        )
      }
      const chargeHit = (input: HitInput) =>
        Effect.flatMap(Deferred.make<HitOutcome, SqlError>(), (done) =>
          Effect.andThen(Queue.offer(hits, { input, done }), Deferred.await(done))
        )

      /** `alert_armed` after `added` credits: armed again once the spendable credits reach the threshold. */
      const rearmed = (added: number) =>
        sql`(alert_armed OR (alert_threshold > 0 AND grant_credits + balance_credits + ${added} >= alert_threshold))`

      /**
       * After a charge: if it took the spendable credits below an armed threshold, disarm it and queue
       * the one email of this crossing, in the charge's transaction. The conditional update decides:
       * of two racing charges only one finds the alert armed.
       */
      const alertOnCrossing = (accountId: string) =>
        Effect.gen(function* () {
          const crossed = yield* sql`UPDATE accounts SET alert_armed = false
            WHERE id = ${accountId} AND alert_armed AND grant_credits + balance_credits < alert_threshold
            RETURNING email, alert_threshold, grant_credits + balance_credits AS spendable`.pipe(
            Effect.flatMap(decodeCrossings)
          )
          const row = crossed[0]
          if (row === undefined || row.email === null) return
          yield* outbox.enqueue(
            alertMail({
              to: row.email,
              accountId,
              threshold: row.alert_threshold,
              spendable: row.spendable,
              upgradeUrl: upgradeUrl(upgradeBase, accountId)
            })
          )
        })

      /**
       * Ends a reserved call: charge `charged` (free first, then grant, then balance), return the
       * rest where it came from. The call row's state guards against finishing twice; the account is
       * locked first (the ledger's lock order) only when credits go back to it.
       */
      const finish = (call: Held, charged: number, refunds: ReadonlyArray<Refund>, now: number) =>
        Effect.gen(function* () {
          const settled = split(call.reserved, charged)
          const { free_tier: backFree, grant: backGrant, balance: backBalance } = settled.returned
          if (backGrant + backBalance > 0) {
            yield* sql`SELECT id FROM accounts WHERE id = ${call.accountId} FOR UPDATE`
          }
          const state = charged === 0 && refunds.length === 0 ? "released" : "settled"
          const updated = yield* sql`UPDATE calls SET state = ${state}, charged = ${total(settled.charged)},
              charged_free = ${settled.charged.free_tier}, charged_grant = ${settled.charged.grant},
              charged_balance = ${settled.charged.balance},
              refunds = ${JSON.stringify(refunds)}, settled_at = ${now}
            WHERE id = ${call.callId} AND state = 'reserved' RETURNING *`.pipe(Effect.flatMap(decodeCalls))
          if (updated[0] === undefined) return undefined
          if (backFree > 0) {
            yield* sql`UPDATE free_tier_usage SET credits_used = credits_used - ${backFree}
              WHERE ip = ${call.ip} AND day = ${call.day}`
            yield* sql`UPDATE free_tier_days SET credits_used = credits_used - ${backFree} WHERE day = ${call.day}`
          }
          if (backGrant + backBalance > 0) {
            yield* sql`UPDATE accounts SET grant_credits = grant_credits + ${backGrant},
              balance_credits = balance_credits + ${backBalance},
              alert_armed = ${rearmed(backGrant + backBalance)} WHERE id = ${call.accountId}`
          }
          return receiptOf(updated[0])
        })

      /** A reserved call known only by its id (the sweeper's case). */
      const finishById = (callId: string, now: number) =>
        Effect.gen(function* () {
          const rows = yield* sql`SELECT * FROM calls WHERE id = ${callId}`.pipe(Effect.flatMap(decodeCalls))
          const row = rows[0]
          if (row === undefined || row.state !== "reserved") return undefined
          return yield* finish(heldOf(row), 0, [], now)
        })

      // Each refund in its own transaction, as the sweeper does.
      const sweepAccount = (accountId: string, now: number) =>
        Effect.gen(function* () {
          const expired = yield* sql`SELECT id FROM calls
            WHERE account_id = ${accountId} AND state = 'reserved' AND lease_expires_at <= ${now}`.pipe(
            Effect.flatMap(decodeCallIds)
          )
          for (const row of expired) yield* sql.withTransaction(finishById(row.id, now))
        })

      const reserve = Effect.fn("Ledger.reserve")(function* (input: ReserveInput) {
        const now = yield* Clock.currentTimeMillis
        const day = dayOf(now)
        const operator = yield* settings.current
        const callId = input.callId
        const attempt = (afterSweep: boolean) =>
          sql.withTransaction(
            Effect.gen(function* () {
              const accountRows = yield* sql`
              SELECT grant_credits, balance_credits, alert_threshold, alert_armed
              FROM accounts WHERE id = ${input.accountId} FOR UPDATE`.pipe(Effect.flatMap(decodeFunds))
              const inFlight = yield* sql`
              SELECT lease_expires_at, created_at, heartbeat_at FROM calls
              WHERE account_id = ${input.accountId} AND state = 'reserved'`.pipe(
                Effect.flatMap(decodeHolders)
              )
              const account = { accountId: input.accountId, plan: input.plan }
              if (!afterSweep && inFlight.some((row) => row.lease_expires_at <= now)) {
                return yield* new LeaseExpired()
              }
              const holder = inFlight[0]
              if (holder !== undefined) {
                return yield* new ConcurrencyLimit({
                  message:
                    "Another call on this account is in flight; one call at a time per account. Retry after retry_after_seconds.",
                  retry_after_seconds: retryAfterSeconds(
                    {
                      leaseExpiresAt: holder.lease_expires_at,
                      lastSeenAt: Math.max(holder.created_at, holder.heartbeat_at ?? 0)
                    },
                    now
                  ),
                  account
                })
              }
              const grant = accountRows[0]?.grant_credits ?? 0
              const balance = accountRows[0]?.balance_credits ?? 0
              const alertThreshold = accountRows[0]?.alert_armed ? accountRows[0].alert_threshold : undefined

              let freeAvailable = 0
              let globalExhausted = false
              const freeEligible = input.plan === "trial" && !input.realtime && operator.freeTierOpen
              if (freeEligible) {
                yield* sql`INSERT INTO free_tier_usage (ip, day, credits_used) VALUES (${input.ip}, ${day}, 0)
                ON CONFLICT (ip, day) DO NOTHING`
                const used = yield* sql`SELECT credits_used FROM free_tier_usage
                WHERE ip = ${input.ip} AND day = ${day} FOR UPDATE`.pipe(Effect.flatMap(decodeFreeUse))
                freeAvailable = policy.freeCreditsPerIpDay - (used[0]?.credits_used ?? 0)
                yield* sql`INSERT INTO free_tier_days (day, credits_used) VALUES (${day}, 0) ON CONFLICT (day) DO NOTHING`
                const global = yield* sql`SELECT credits_used FROM free_tier_days
                WHERE day = ${day} FOR UPDATE`.pipe(Effect.flatMap(decodeFreeUse))
                if (operator.globalDailyFreeCredits !== undefined) {
                  const globalLeft = operator.globalDailyFreeCredits - (global[0]?.credits_used ?? 0)
                  globalExhausted = globalLeft < Math.min(input.quoted, Math.max(freeAvailable, 0))
                  freeAvailable = Math.min(freeAvailable, globalLeft)
                }
                freeAvailable = Math.max(0, freeAvailable)
              }
              const drawn = draw(input.quoted, { free_tier: freeAvailable, grant, balance })
              if (drawn === undefined) {
                const fromFree = Math.min(freeAvailable, input.quoted)
                const funded =
                  yield* sql`SELECT 1 FROM credit_events WHERE account_id = ${input.accountId} LIMIT 1`
                if (funded.length > 0 || input.plan !== "trial") {
                  return yield* new InsufficientCredits({
                    message: `This call is quoted ${input.quoted} credits and the account can cover ${fromFree + grant + balance}. Buy a pack at upgrade_url, then retry with the SAME Idempotency-Key.`,
                    credits_required: input.quoted,
                    credits_available: fromFree + grant + balance,
                    account
                  })
                }
                if (!operator.freeTierOpen || globalExhausted) {
                  return yield* new BudgetExhausted({
                    message:
                      "The shared free-tier budget is used up or closed for today. Buy a pack to keep calling; cached data still serves paid keys.",
                    account
                  })
                }
                return yield* new TrialCapExceeded({
                  message: `Free keys from this IP share ${policy.freeCreditsPerIpDay} credits per UTC day; ${freeAvailable} are left and this call is quoted ${input.quoted}. Wait for the UTC day to roll over or buy a pack.`,
                  account
                })
              }
              const { free_tier: fromFree, grant: fromGrant, balance: fromBalance } = drawn
              if (fromFree > 0) {
                yield* sql`UPDATE free_tier_usage SET credits_used = credits_used + ${fromFree}
                WHERE ip = ${input.ip} AND day = ${day}`
                yield* sql`UPDATE free_tier_days SET credits_used = credits_used + ${fromFree} WHERE day = ${day}`
              }
              if (fromGrant + fromBalance > 0) {
                yield* sql`UPDATE accounts SET grant_credits = grant_credits - ${fromGrant},
                balance_credits = balance_credits - ${fromBalance} WHERE id = ${input.accountId}`
              }
              yield* sql`INSERT INTO calls (id, account_id, key_id, operation, state, ip, day, quoted,
                reserved_free, reserved_grant, reserved_balance, idempotency_key, lease_expires_at, created_at)
              VALUES (${callId}, ${input.accountId}, ${input.keyId}, ${input.operation}, 'reserved', ${input.ip}, ${day},
                ${input.quoted}, ${fromFree}, ${fromGrant}, ${fromBalance}, ${input.idempotencyKey ?? null},
                ${now + leaseMs}, ${now})`
              return {
                callId,
                accountId: input.accountId,
                ip: input.ip,
                day,
                operation: input.operation,
                quoted: input.quoted,
                reserved: drawn,
                idempotencyKey: input.idempotencyKey,
                createdAt: now,
                alertThreshold
              } satisfies Reservation
            })
          )
        // A dead holder's lease blocks the slot: refund it in transactions of its own (the lock order
        // of a reservation must not be broken by another IP's rows), then try once more.
        return yield* attempt(false).pipe(
          Effect.catchTag("LeaseExpired", () =>
            Effect.andThen(
              sweepAccount(input.accountId, now),
              attempt(true).pipe(Effect.catchTag("LeaseExpired", (signal) => Effect.die(signal)))
            )
          )
        )
      })

      const settle = <E>(
        reservation: Reservation,
        refunds: ReadonlyArray<Refund>,
        alsoInTransaction: (receipt: Receipt) => Effect.Effect<void, E>
      ) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const kept = refunds.filter((refund) => refund.credits > 0)
          const refunded = Math.min(
            reservation.quoted,
            kept.reduce((sum, refund) => sum + refund.credits, 0)
          )
          return yield* sql.withTransaction(
            Effect.gen(function* () {
              const receipt = yield* finish(reservation, reservation.quoted - refunded, kept, now)
              if (receipt === undefined) return yield* new ReservationLost({ callId: reservation.callId })
              if (
                reservation.alertThreshold !== undefined &&
                receipt.funding.grant + receipt.funding.balance > 0
              ) {
                yield* alertOnCrossing(reservation.accountId)
              }
              yield* alsoInTransaction(receipt)
              return receipt
            })
          )
        }).pipe(Effect.withSpan("Ledger.settle"))

      const release = Effect.fn("Ledger.release")(function* (reservation: Reservation) {
        const now = yield* Clock.currentTimeMillis
        const finished = yield* sql.withTransaction(finish(reservation, 0, [], now))
        return finished !== undefined
      })

      /** The statements of a credit, inside the caller's transaction. */
      const addCredits = (input: CreditInput, now: number) =>
        Effect.gen(function* () {
          const id = yield* ids.newId("cred")
          const rows =
            input.kind === "grant"
              ? yield* sql`UPDATE accounts SET grant_credits = grant_credits + ${input.credits},
                  alert_armed = ${rearmed(input.credits)} WHERE id = ${input.accountId} RETURNING id`
              : yield* sql`UPDATE accounts SET balance_credits = balance_credits + ${input.credits},
                  alert_armed = ${rearmed(input.credits)} WHERE id = ${input.accountId} RETURNING id`
          if (rows.length === 0) return false
          yield* sql`INSERT INTO credit_events (id, account_id, kind, credits, reason, created_at)
            VALUES (${id}, ${input.accountId}, ${input.kind}, ${input.credits}, ${input.reason}, ${now})`
          return true
        })

      const credit = Effect.fn("Ledger.credit")(function* (input: CreditInput) {
        const now = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(addCredits(input, now))
      })

      const grantOnce = Effect.fn("Ledger.grantOnce")(function* (input: {
        readonly accountId: string
        readonly email: string
        readonly keyId: string
      }) {
        const now = yield* Clock.currentTimeMillis
        const credits = policy.claimGrantCredits
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            // The unique mailbox and key columns decide, also between racing transactions.
            const inserted =
              yield* sql`INSERT INTO grants (account_id, email, mailbox, key_id, credits, created_at)
              VALUES (${input.accountId}, ${input.email}, ${mailboxOf(input.email)}, ${input.keyId}, ${credits}, ${now})
              ON CONFLICT DO NOTHING RETURNING account_id`
            if (inserted.length === 0) return 0
            yield* addCredits(
              { accountId: input.accountId, credits, kind: "grant", reason: "claim grant" },
              now
            )
            return credits
          })
        )
      })

      const applyPurchase = Effect.fn("Ledger.applyPurchase")(function* (input: PurchaseInput) {
        const now = yield* Clock.currentTimeMillis
        const id = yield* ids.newId("pur")
        const credits = input.pack.credits ?? input.pack.credits_per_month ?? 0
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const inserted =
              yield* sql`INSERT INTO purchases (id, account_id, pack, rail, payment_ref, credits,
                price_usd_cents, currency, period_end, created_at)
              VALUES (${id}, ${input.accountId}, ${input.pack.pack}, ${input.rail}, ${input.paymentRef}, ${credits},
                ${input.pack.price_usd_cents}, 'usd', ${input.periodEnd ?? null}, ${now})
              ON CONFLICT (payment_ref) DO NOTHING RETURNING id`
            if (inserted.length === 0) return false
            yield* addCredits(
              {
                accountId: input.accountId,
                credits,
                kind: "balance",
                reason: `purchase ${input.pack.pack} ${id}`
              },
              now
            )
            yield* keyMemory.changing(input.accountId)
            yield* input.pack.pack === "production"
              ? sql`UPDATE accounts SET plan = 'production' WHERE id = ${input.accountId}`
              : sql`UPDATE accounts SET plan = 'flex' WHERE id = ${input.accountId} AND plan = 'trial'`
            return true
          })
        )
      })

      const heartbeat = Effect.fn("Ledger.heartbeat")(function* (callId: string) {
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
        for (const row of expired) yield* sql.withTransaction(finishById(row.id, now))
        return expired.length
      }).pipe(Effect.withSpan("Ledger.sweepExpired"))

      const receipts = Effect.fn("Ledger.receipts")(function* (
        accountId: string,
        options: {
          readonly limit: number
          readonly before?: { readonly createdAt: number; readonly id: string } | undefined
        }
      ) {
        const before = options.before
        const rows = yield* before === undefined
          ? sql`SELECT * FROM calls WHERE account_id = ${accountId} AND state = 'settled'
              ORDER BY created_at DESC, id DESC LIMIT ${options.limit}`
          : sql`SELECT * FROM calls WHERE account_id = ${accountId} AND state = 'settled'
              AND (created_at < ${before.createdAt} OR (created_at = ${before.createdAt} AND id < ${before.id}))
              ORDER BY created_at DESC, id DESC LIMIT ${options.limit}`
        const calls = yield* decodeCalls(rows)
        return calls.map((row) => ({ ...receiptOf(row), createdAtMs: row.created_at }))
      })

      const receipt = Effect.fn("Ledger.receipt")(function* (accountId: string, id: string) {
        const rows =
          yield* sql`SELECT * FROM calls WHERE id = ${id} AND account_id = ${accountId} AND state = 'settled'`.pipe(
            Effect.flatMap(decodeCalls)
          )
        return rows[0] === undefined ? undefined : receiptOf(rows[0])
      })

      return Ledger.of({
        reserve,
        chargeHit,
        hitsUnderWay: new Set(),
        settle,
        release,
        credit,
        grantOnce,
        applyPurchase,
        heartbeat,
        sweepExpired,
        receipts,
        receipt
      })
    })
  )
}
