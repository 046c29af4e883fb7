import { Clock, Context, type Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import { InvalidInput } from "../contract/errors.ts"
import type { Pack } from "../domain/plans.ts"
import { Audit } from "../services/Audit.ts"
import { Credits } from "../services/Credits.ts"
import { Ids } from "../services/Ids.ts"
import { topupDisarmedMail } from "../services/mail/messages.ts"
import { Outbox } from "../services/mail/Outbox.ts"
import { pollLoop } from "../services/polling.ts"
import { WebhookEvents } from "../services/WebhookEvents.ts"
import * as Row from "../store/rows.ts"
import { PaymentRails, type SavedChargeOutcome } from "./PaymentRail.ts"
import { TopupWake } from "./TopupWake.ts"

/** `GET /v1/topup`: the settings, this month's spend and the last top-up. */
export interface TopupView {
  readonly account_id: string
  readonly enabled: boolean
  readonly pack: string | null
  readonly credits: number | null
  readonly price_usd_cents: number | null
  readonly below_credits: number | null
  readonly monthly_max_usd_cents: number | null
  /** The UTC month (`YYYY-MM`) the maximum counts, and what its top-ups (open or paid) cost so far. */
  readonly month: string
  readonly month_spent_usd_cents: number
  readonly failures_in_a_row: number
  readonly last_topup: {
    readonly topup_id: string
    readonly state: "pending" | "charging" | "succeeded" | "failed"
    readonly rail: string | null
    readonly credits: number
    readonly price_usd_cents: number
    readonly created_at: string
    readonly settled_at: string | null
    readonly error: string | null
  } | null
}

const SettingsRow = Schema.Struct({
  enabled: Schema.Boolean,
  pack: Schema.String,
  credits: Row.Int,
  price_usd_cents: Row.Int,
  below_credits: Row.Int,
  monthly_max_usd_cents: Row.Int,
  failures: Row.Int
})
const decodeSettings = Row.decoder(SettingsRow, "topup_settings")
const TopupRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  pack: Schema.String,
  credits: Row.Int,
  price_usd_cents: Row.Int,
  state: Schema.Literals(["pending", "charging", "succeeded", "failed"]),
  rail: Schema.NullOr(Schema.String),
  attempts: Row.Int,
  created_at: Row.Int,
  settled_at: Row.NullableInt,
  error: Schema.NullOr(Schema.String)
})
type TopupRow = typeof TopupRow.Type
const decodeTopups = Row.decoder(TopupRow, "topups")
const decodeSpent = Row.decoder(Schema.Struct({ spent: Row.Int }), "topups (month)")
const decodeFailures = Row.decoder(
  Schema.Struct({ failures: Row.Int, enabled: Schema.Boolean, email: Schema.NullOr(Schema.String) }),
  "topup_settings (failure)"
)

const topupColumns =
  "id, account_id, pack, credits, price_usd_cents, state, rail, attempts, created_at, settled_at, error"

/** The UTC month of `now`, as `svc_topup_arm` names it. */
export const monthOf = (now: number) => new Date(now).toISOString().slice(0, 7)

/** A provider that did not answer: the same top-up is tried again after this wait (doubling). */
const unansweredWaitMs = (attempts: number) => Math.min(60_000 * 2 ** Math.max(0, attempts - 1), 3_600_000)
/** A claim lasts longer than a provider call may take (its SDK's 20 s timeout). */
const leaseMs = 60_000

/**
 * Automatic top-up: an account's settings (`POST /v1/topup` arms and disarms, `GET` shows), and the
 * worker that pays what the money rule armed (`svc_topup_arm`, in the transaction of the charge
 * that crossed the line). Each top-up is claimed by a lease, as outbox mail is, then paid: on the
 * local rail at once (test mode), on Stripe by an off-session charge of the payment method an
 * earlier checkout saved, credited only when its verified webhook reports it paid. Every credit is
 * `Credits.applyPurchase` under the payment's reference, so none is applied twice. Failures in a
 * row disarm it and email the owner. Lock order as the money rule's: the account, then its top-ups.
 */
export class Topups extends Context.Service<
  Topups,
  {
    readonly show: (accountId: string) => Effect.Effect<TopupView, SqlError>
    readonly arm: (
      accountId: string,
      input: { readonly pack: string; readonly below_credits: number; readonly monthly_max_usd_cents: number }
    ) => Effect.Effect<TopupView, InvalidInput | SqlError>
    readonly disarm: (accountId: string) => Effect.Effect<TopupView, SqlError>
    /** Pays every top-up due now (claimed by no one else); how many were settled or handed to the provider. */
    readonly processDue: Effect.Effect<number, SqlError>
    /** A verified provider webhook: the top-up's payment succeeded. Joins the caller's transaction. */
    readonly paid: (topupId: string, paymentRef: string) => Effect.Effect<boolean, SqlError>
    /** A verified provider webhook: the top-up's payment failed. Joins the caller's transaction. */
    readonly failed: (topupId: string, message: string) => Effect.Effect<boolean, SqlError>
  }
>()("payments/Topups") {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const credits = yield* Credits
    const rails = yield* PaymentRails
    const outbox = yield* Outbox
    const events = yield* WebhookEvents
    const audit = yield* Audit
    const config = yield* AppConfig
    const limits = config.policy.topup
    const oneTimePacks = config.policy.packs.filter((pack) => pack.mode === "one_time")

    /** The rail that pays an account's top-ups: Stripe for its customers, else the local rail if offered. */
    const railFor = (accountId: string) =>
      Effect.gen(function* () {
        const stripe = rails.get("stripe")
        if (stripe?.saved !== undefined && (yield* stripe.saved.isCustomer(accountId))) return stripe
        return rails.get("local")
      })

    const spentIn = (accountId: string, month: string) =>
      sql`SELECT COALESCE(SUM(price_usd_cents), 0) AS spent FROM topups
        WHERE account_id = ${accountId} AND month = ${month} AND state <> 'failed'`.pipe(
        Effect.flatMap(decodeSpent),
        Effect.map((rows) => rows[0]?.spent ?? 0)
      )

    const show = Effect.fn("Topups.show")(function* (accountId: string) {
      const now = yield* Clock.currentTimeMillis
      const month = monthOf(now)
      const [settings] = yield* sql`SELECT enabled, pack, credits, price_usd_cents, below_credits,
          monthly_max_usd_cents, failures FROM topup_settings WHERE account_id = ${accountId}`.pipe(
        Effect.flatMap(decodeSettings)
      )
      const [last] = yield* sql`SELECT ${sql.literal(topupColumns)} FROM topups
        WHERE account_id = ${accountId} ORDER BY created_at DESC, id DESC LIMIT 1`.pipe(
        Effect.flatMap(decodeTopups)
      )
      return {
        account_id: accountId,
        enabled: settings?.enabled ?? false,
        pack: settings?.pack ?? null,
        credits: settings?.credits ?? null,
        price_usd_cents: settings?.price_usd_cents ?? null,
        below_credits: settings?.below_credits ?? null,
        monthly_max_usd_cents: settings?.monthly_max_usd_cents ?? null,
        month,
        month_spent_usd_cents: yield* spentIn(accountId, month),
        failures_in_a_row: settings?.failures ?? 0,
        last_topup:
          last === undefined
            ? null
            : {
                topup_id: last.id,
                state: last.state,
                rail: last.rail,
                credits: last.credits,
                price_usd_cents: last.price_usd_cents,
                created_at: new Date(last.created_at).toISOString(),
                settled_at: last.settled_at === null ? null : new Date(last.settled_at).toISOString(),
                error: last.error
              }
      } satisfies TopupView
    })

    const arm = Effect.fn("Topups.arm")(function* (
      accountId: string,
      input: { readonly pack: string; readonly below_credits: number; readonly monthly_max_usd_cents: number }
    ) {
      const pack = oneTimePacks.find((candidate) => candidate.pack === input.pack)
      if (pack === undefined)
        return yield* new InvalidInput({
          message: `A top-up buys a one-time pack: ${oneTimePacks.map((p) => p.pack).join(" or ")}. "${input.pack.slice(0, 32)}" is not one (a subscription renews by itself).`,
          param: "pack"
        })
      if (input.monthly_max_usd_cents < pack.price_usd_cents)
        return yield* new InvalidInput({
          message: `monthly_max_usd_cents (${input.monthly_max_usd_cents}) is below the price of one ${pack.pack} pack (${pack.price_usd_cents} cents): no top-up could ever be charged. Raise it, or disarm with { "enabled": false }.`,
          param: "monthly_max_usd_cents"
        })
      const rail = yield* railFor(accountId)
      if (rail === undefined)
        return yield* new InvalidInput({
          message:
            "Automatic top-up charges the payment method an earlier checkout saved, and this account has none yet. Buy a pack once (POST /v1/checkout), then arm it.",
          param: "pack"
        })
      const now = yield* Clock.currentTimeMillis
      yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`SELECT id FROM accounts WHERE id = ${accountId} FOR UPDATE`
          yield* sql`INSERT INTO topup_settings (account_id, enabled, pack, credits, price_usd_cents, below_credits,
              monthly_max_usd_cents, failures, retry_at, updated_at)
            VALUES (${accountId}, true, ${pack.pack}, ${pack.credits ?? 0}, ${pack.price_usd_cents},
              ${input.below_credits}, ${input.monthly_max_usd_cents}, 0, NULL, ${now})
            ON CONFLICT (account_id) DO UPDATE SET enabled = true, pack = EXCLUDED.pack, credits = EXCLUDED.credits,
              price_usd_cents = EXCLUDED.price_usd_cents, below_credits = EXCLUDED.below_credits,
              monthly_max_usd_cents = EXCLUDED.monthly_max_usd_cents, failures = 0, retry_at = NULL,
              updated_at = EXCLUDED.updated_at`
          // Arming authorises card charges: who did it, and with which pack, is in the audit log.
          yield* audit.record(accountId, "topup.armed", pack.pack)
        })
      )
      return yield* show(accountId)
    })

    const disarm = Effect.fn("Topups.disarm")(function* (accountId: string) {
      const now = yield* Clock.currentTimeMillis
      yield* sql.withTransaction(
        Effect.gen(function* () {
          const disarmed = yield* sql`UPDATE topup_settings SET enabled = false, updated_at = ${now}
            WHERE account_id = ${accountId} AND enabled RETURNING account_id`
          // Disarming what was not armed changes nothing, and so records nothing.
          if (disarmed.length > 0) yield* audit.record(accountId, "topup.disarmed", null)
        })
      )
      return yield* show(accountId)
    })

    /** The top-up, locked after its account (the lock order); undefined if it is not in one of `states`. */
    const lockTopup = (topupId: string, states: ReadonlyArray<TopupRow["state"]>) =>
      Effect.gen(function* () {
        const [owner] =
          yield* sql`SELECT ${sql.literal(topupColumns)} FROM topups WHERE id = ${topupId}`.pipe(
            Effect.flatMap(decodeTopups)
          )
        if (owner === undefined) return undefined
        yield* sql`SELECT id FROM accounts WHERE id = ${owner.account_id} FOR UPDATE`
        const [row] =
          yield* sql`SELECT ${sql.literal(topupColumns)} FROM topups WHERE id = ${topupId} FOR UPDATE`.pipe(
            Effect.flatMap(decodeTopups)
          )
        return row !== undefined && states.includes(row.state) ? row : undefined
      })

    const packOf = (row: TopupRow): Pack => {
      const configured = config.policy.packs.find((pack) => pack.pack === row.pack)
      // The credits and price the top-up was armed with (the month's maximum counted them), whatever the pack costs now.
      return {
        pack: configured?.pack ?? "flex",
        mode: "one_time",
        price_usd_cents: row.price_usd_cents,
        credits: row.credits
      }
    }

    /** Credits a top-up once (its payment's reference applies once) and reports it. Inside a transaction. */
    const succeed = (row: TopupRow, rail: string, paymentRef: string) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        yield* sql`UPDATE topups SET state = 'succeeded', rail = ${rail}, payment_ref = ${paymentRef},
            settled_at = ${now}, locked_until = NULL, lease_token = NULL
          WHERE id = ${row.id}`
        yield* credits.applyPurchase({ accountId: row.account_id, pack: packOf(row), rail, paymentRef })
        yield* sql`UPDATE topup_settings SET failures = 0 WHERE account_id = ${row.account_id}`
        yield* audit.record(row.account_id, "topup.succeeded", row.id)
        yield* events.emit(row.account_id, "topup.succeeded", {
          topup_id: row.id,
          pack: row.pack,
          credits: row.credits,
          price_usd_cents: row.price_usd_cents,
          currency: "usd",
          rail,
          month_spent_usd_cents: yield* spentIn(row.account_id, monthOf(row.created_at))
        })
        return true
      })

    /** A failed top-up: counted, and past the allowance automatic top-up is disarmed and the owner emailed. */
    const fail = (row: TopupRow, message: string) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        yield* sql`UPDATE topups SET state = 'failed', error = ${message}, settled_at = ${now},
            locked_until = NULL, lease_token = NULL
          WHERE id = ${row.id}`
        const [counted] = yield* sql`UPDATE topup_settings s SET failures = s.failures + 1,
            retry_at = ${now + limits.retryAfterFailureMs},
            enabled = s.enabled AND s.failures + 1 < ${limits.failuresToDisarm}
          FROM accounts a WHERE s.account_id = ${row.account_id} AND a.id = s.account_id
          RETURNING s.failures, s.enabled, a.email`.pipe(Effect.flatMap(decodeFailures))
        // This failure is the one that turns it off: one email, however many more fail after it.
        const disarmed =
          counted !== undefined && !counted.enabled && counted.failures === limits.failuresToDisarm
        if (disarmed) yield* audit.record(row.account_id, "topup.disarmed", row.id)
        if (disarmed && counted.email !== null)
          yield* outbox.enqueue(
            topupDisarmedMail({
              to: counted.email,
              accountId: row.account_id,
              failures: counted.failures,
              lastError: message,
              billingUrl: `${config.baseUrl}/dashboard/billing?account=${encodeURIComponent(row.account_id)}`
            })
          )
        yield* events.emit(row.account_id, "topup.failed", {
          topup_id: row.id,
          pack: row.pack,
          price_usd_cents: row.price_usd_cents,
          error: message,
          failures_in_a_row: counted?.failures ?? 1,
          disarmed
        })
        yield* Effect.logWarning(
          `topup ${row.id} failed: ${message}${disarmed ? " (automatic top-up disarmed)" : ""}`
        )
        return true
      })

    const paid = Effect.fn("Topups.paid")(function* (topupId: string, paymentRef: string) {
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          // A failed top-up whose payment is reported paid after all is credited: the money was taken.
          const row = yield* lockTopup(topupId, ["pending", "charging", "failed"])
          if (row === undefined) return false
          return yield* succeed(row, "stripe", paymentRef)
        })
      )
    })

    const failed = Effect.fn("Topups.failed")(function* (topupId: string, message: string) {
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const row = yield* lockTopup(topupId, ["pending", "charging"])
          if (row === undefined) return false
          return yield* fail(row, message)
        })
      )
    })

    const claim = (now: number, token: string) =>
      sql`UPDATE topups SET locked_until = ${now + leaseMs}, lease_token = ${token}
        WHERE id = (
          SELECT id FROM topups
          WHERE state = 'pending' AND next_attempt_at <= ${now} AND (locked_until IS NULL OR locked_until <= ${now})
          ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED
        ) AND state = 'pending' AND (locked_until IS NULL OR locked_until <= ${now})
        RETURNING ${sql.literal(topupColumns)}`.pipe(
        Effect.flatMap(decodeTopups),
        Effect.map((rows) => rows[0])
      )

    /** The claimed top-up, still pending and ours, locked (after its account) for a change. */
    const stillOurs = (row: TopupRow, token: string) =>
      Effect.flatMap(lockTopup(row.id, ["pending"]), (locked) =>
        locked === undefined
          ? Effect.succeed(undefined)
          : Effect.map(sql`SELECT id FROM topups WHERE id = ${row.id} AND lease_token = ${token}`, (held) =>
              held.length > 0 ? locked : undefined
            )
      )

    const payOne = (row: TopupRow, token: string) =>
      Effect.gen(function* () {
        const rail = yield* railFor(row.account_id)
        if (rail === undefined || (rail.name !== "local" && rail.saved === undefined))
          return yield* sql.withTransaction(
            Effect.flatMap(stillOurs(row, token), (locked) =>
              locked === undefined
                ? Effect.succeed(false)
                : fail(locked, "no rail can pay a top-up for this account")
            )
          )
        if (rail.saved === undefined)
          // The local rail moves no money: the top-up is paid at once (test mode).
          return yield* sql.withTransaction(
            Effect.flatMap(stillOurs(row, token), (locked) =>
              locked === undefined ? Effect.succeed(false) : succeed(locked, "local", `topup:${row.id}`)
            )
          )
        const outcome = yield* Effect.result(
          rail.saved.charge({
            topupId: row.id,
            accountId: row.account_id,
            amountUsdCents: row.price_usd_cents,
            description: `Automatic top-up ${row.id}: ${row.pack}, ${row.credits} credits`
          })
        )
        const now = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const locked = yield* stillOurs(row, token)
            if (locked === undefined) return false
            if (outcome._tag === "Failure") {
              const attempts = locked.attempts + 1
              if (attempts >= limits.chargeAttempts)
                return yield* fail(
                  locked,
                  `the payment provider did not answer ${attempts} times (${outcome.failure.message})`
                )
              yield* sql`UPDATE topups SET attempts = ${attempts}, next_attempt_at = ${now + unansweredWaitMs(attempts)},
                  locked_until = NULL, lease_token = NULL WHERE id = ${row.id}`
              return false
            }
            const answer: SavedChargeOutcome = outcome.success
            if (answer._tag === "Declined") return yield* fail(locked, answer.message)
            // Accepted: credited when the provider's verified webhook says it is paid.
            yield* sql`UPDATE topups SET state = 'charging', rail = ${rail.name}, payment_ref = ${answer.paymentRef},
                attempts = attempts + 1, locked_until = NULL, lease_token = NULL
              WHERE id = ${row.id}`
            return true
          })
        )
      })

    const processDue = Effect.gen(function* () {
      let handled = 0
      for (let n = 0; n < 100; n++) {
        const now = yield* Clock.currentTimeMillis
        const token = yield* ids.newId("lease")
        const row = yield* claim(now, token)
        if (row === undefined) break
        if (yield* payOne(row, token)) handled++
      }
      return handled
    }).pipe(Effect.withSpan("Topups.processDue"))

    return Topups.of({ show, arm, disarm, processDue, paid, failed })
  })

  static readonly layer = Layer.effect(Topups, Topups.make)

  /**
   * The top-up worker: pays what is due at once when a charge here wakes it; otherwise it looks
   * after `pollEvery` (1 s), doubling up to `idleMax` (10 s) while there is nothing to pay, for
   * top-ups armed on other instances and retries (due minutes later).
   */
  static readonly worker = (
    options: { readonly pollEvery?: Duration.Input; readonly idleMax?: Duration.Input } = {}
  ) =>
    Layer.effectDiscard(
      Effect.gen(function* () {
        const topups = yield* Topups
        const wake = yield* TopupWake
        yield* Effect.forkScoped(
          pollLoop({
            step: topups.processDue.pipe(
              Effect.map((handled) => handled > 0),
              Effect.catchCause((cause) =>
                Effect.as(Effect.logWarning("topups: the due top-ups could not be read", cause), false)
              )
            ),
            wake,
            first: options.pollEvery ?? "1 second",
            max: options.idleMax ?? "10 seconds"
          })
        )
      })
    )
}
