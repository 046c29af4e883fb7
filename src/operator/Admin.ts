import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { AuditAction } from "../domain/audit.ts"
import type { Plan, Platform } from "../domain/plans.ts"
import { dayOf } from "../domain/time.ts"
import { Billing } from "../payments/Billing.ts"
import { Checkout } from "../payments/Checkout.ts"
import { type Account, Accounts } from "../services/Accounts.ts"
import { Audit } from "../services/Audit.ts"
import { Credits } from "../services/Credits.ts"
import { KeyMemory } from "../services/KeyMemory.ts"
import { type OperatorSettings, Settings } from "../services/Settings.ts"
import * as Row from "../store/rows.ts"

/** Every purchase an operator reads of an account (a person's portal shows the newest 100). */
const operatorPurchasesShown = 10_000

export interface AccountReport {
  readonly account: Account
  readonly keys: ReadonlyArray<{ readonly id: string; readonly hint: string; readonly revoked: boolean }>
  readonly free_tier_used_today: ReadonlyArray<{ readonly ip: string; readonly credits: number }>
  readonly in_flight: number
}

const decodeKeys = Row.decoder(
  Schema.Struct({ id: Schema.String, hint: Schema.String, revoked_at: Row.NullableInt }),
  "api_keys"
)
const decodeFreeUse = Row.decoder(
  Schema.Struct({ ip: Schema.String, credits: Row.Int }),
  "free_tier_usage of the account's calls"
)
const decodeCount = Row.decoder(Schema.Struct({ n: Row.Int }), "calls in flight (count)")

/** One outbox message as the operator sees it; `text` is there until it is delivered (then null). */
export interface OutboxMessage {
  readonly id: string
  readonly to: string
  readonly subject: string
  readonly kind: string
  readonly created_at: number
  readonly sent_at: number | null
  readonly attempts: number
  readonly next_attempt_at: number
  readonly last_error: string | null
  readonly text: string | null
}

const decodeOutbox = Row.decoder(
  Schema.Struct({
    id: Schema.String,
    to: Schema.String,
    subject: Schema.String,
    kind: Schema.String,
    created_at: Row.Int,
    sent_at: Row.NullableInt,
    attempts: Row.Int,
    next_attempt_at: Row.Int,
    last_error: Schema.NullOr(Schema.String),
    text: Schema.NullOr(Schema.String)
  }),
  "outbox"
)

/** An account's money as the operator sees it: purchases newest first and its subscription (times epoch ms). */
export interface PurchasesReport {
  readonly account_id: string
  readonly purchases: ReadonlyArray<{
    readonly id: string
    readonly pack: string
    readonly rail: string
    readonly payment_ref: string
    readonly credits: number
    readonly price_usd_cents: number
    readonly period_end: number | null
    readonly created_at: number
    /** x402 purchases: the payer, the network and the settling transaction. */
    readonly payer: string | null
    readonly network: string | null
    readonly transaction_hash: string | null
  }>
  /** The active subscription, else the latest canceled one; null when it never had one. */
  readonly subscription: {
    readonly pack: string
    readonly rail: string
    readonly status: "active" | "canceled"
    readonly current_period_end: number
    readonly cancel_at_period_end: boolean
  } | null
}

export class AccountNotFound extends Error {
  readonly _tag = "AccountNotFound"
}

/**
 * Operator tasks: grant credits, set plan, entitle platforms, suspend, close the free tier, pause
 * live fetching, read the mail outbox, list purchases, renew a local subscription.
 */
export class Admin extends Context.Service<
  Admin,
  {
    readonly account: (accountId: string) => Effect.Effect<AccountReport | undefined, SqlError>
    readonly credit: (
      accountId: string,
      credits: number,
      kind: "balance" | "grant",
      reason: string
    ) => Effect.Effect<Account | undefined, SqlError>
    readonly setPlan: (accountId: string, plan: Plan) => Effect.Effect<Account | undefined, SqlError>
    readonly entitle: (
      accountId: string,
      platforms: ReadonlyArray<Platform>
    ) => Effect.Effect<Account | undefined, SqlError>
    readonly setState: (
      accountId: string,
      state: "active" | "suspended"
    ) => Effect.Effect<Account | undefined, SqlError>
    readonly settings: (patch: Partial<OperatorSettings>) => Effect.Effect<OperatorSettings, SqlError>
    /** Newest first; only the messages to `email` (any case) when given. */
    readonly outbox: (filter: {
      readonly email?: string | undefined
      readonly limit: number
    }) => Effect.Effect<ReadonlyArray<OutboxMessage>, SqlError>
    readonly purchases: (accountId: string) => Effect.Effect<PurchasesReport | undefined, SqlError>
    /** One more paid period of the account's local `production` subscription (`Checkout.renewLocal`). */
    readonly renew: (accountId: string) => Effect.Effect<
      | {
          readonly account_id: string
          readonly renewed: boolean
          readonly current_period_end: number | null
          readonly balance_credits: number
        }
      | undefined,
      SqlError
    >
  }
>()("operator/Admin") {
  static readonly layer = Layer.effect(
    Admin,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const keyMemory = yield* KeyMemory
      const accounts = yield* Accounts
      const incoming = yield* Credits
      const settings = yield* Settings
      const checkout = yield* Checkout
      const billing = yield* Billing
      const audit = yield* Audit

      /** The operator's changes, each recorded in its own transaction as the operator's. */
      const byOperator = (accountId: string, action: AuditAction, target: string) =>
        audit.record(accountId, action, target, { kind: "operator", id: "operator" })
      const changeAccount = (
        accountId: string,
        change: Effect.Effect<ReadonlyArray<unknown>, SqlError>,
        action: AuditAction,
        target: string
      ) =>
        sql.withTransaction(
          Effect.flatMap(change, (rows) =>
            rows.length > 0 ? byOperator(accountId, action, target) : Effect.void
          )
        )

      const account = Effect.fn("Admin.account")(function* (accountId: string) {
        const found = yield* accounts.get(accountId)
        if (found === undefined) return undefined
        const today = dayOf(yield* Clock.currentTimeMillis)
        const keys = yield* sql`
          SELECT id, hint, revoked_at FROM api_keys WHERE account_id = ${accountId} ORDER BY created_at`.pipe(
          Effect.flatMap(decodeKeys)
        )
        const free = yield* sql`
          SELECT DISTINCT c.ip, f.credits_used AS credits FROM calls c
          JOIN free_tier_usage f ON f.ip = c.ip AND f.day = c.day
          WHERE c.account_id = ${accountId} AND c.day = ${today}`.pipe(Effect.flatMap(decodeFreeUse))
        const inFlight = yield* sql`
          SELECT COUNT(*) AS n FROM calls WHERE account_id = ${accountId} AND state = 'reserved'`.pipe(
          Effect.flatMap(decodeCount)
        )
        return {
          account: found,
          keys: keys.map((key) => ({ id: key.id, hint: key.hint, revoked: key.revoked_at !== null })),
          free_tier_used_today: free.map((row) => ({ ip: row.ip, credits: row.credits })),
          in_flight: inFlight[0]?.n ?? 0
        }
      })

      const credit = Effect.fn("Admin.credit")(function* (
        accountId: string,
        credits: number,
        kind: "balance" | "grant",
        reason: string
      ) {
        const updated = yield* sql.withTransaction(
          Effect.tap(incoming.credit({ accountId, credits, kind, reason }), (credited) =>
            credited ? byOperator(accountId, "operator.credit", `${credits} ${kind}`) : Effect.void
          )
        )
        return updated ? yield* accounts.get(accountId) : undefined
      })

      const setPlan = Effect.fn("Admin.setPlan")(function* (accountId: string, plan: Plan) {
        yield* keyMemory.changing(accountId)
        yield* changeAccount(
          accountId,
          sql`UPDATE accounts SET plan = ${plan} WHERE id = ${accountId} RETURNING id`,
          "operator.plan",
          plan
        )
        return yield* accounts.get(accountId)
      })

      const entitle = Effect.fn("Admin.entitle")(function* (
        accountId: string,
        platforms: ReadonlyArray<Platform>
      ) {
        yield* keyMemory.changing(accountId)
        yield* changeAccount(
          accountId,
          sql`UPDATE accounts SET entitlements = ${platforms.join(",")} WHERE id = ${accountId} RETURNING id`,
          "operator.entitle",
          platforms.join(",")
        )
        return yield* accounts.get(accountId)
      })

      const setState = Effect.fn("Admin.setState")(function* (
        accountId: string,
        state: "active" | "suspended"
      ) {
        yield* keyMemory.changing(accountId)
        yield* changeAccount(
          accountId,
          sql`UPDATE accounts SET state = ${state} WHERE id = ${accountId} RETURNING id`,
          state === "suspended" ? "operator.suspend" : "operator.reinstate",
          state
        )
        return yield* accounts.get(accountId)
      })

      const outbox = Effect.fn("Admin.outbox")(function* (filter: {
        readonly email?: string | undefined
        readonly limit: number
      }) {
        const recipient =
          filter.email === undefined
            ? sql``
            : sql`WHERE lower(to_email) = ${filter.email.trim().toLowerCase()}`
        return yield* sql`
          SELECT id, to_email AS "to", subject, kind, created_at, sent_at, attempts, next_attempt_at, last_error,
            body_text AS text
          FROM outbox ${recipient} ORDER BY created_at DESC, id DESC LIMIT ${filter.limit}`.pipe(
          Effect.flatMap(decodeOutbox)
        )
      })

      const purchases = Effect.fn("Admin.purchases")(function* (accountId: string) {
        if ((yield* accounts.get(accountId)) === undefined) return undefined
        const history = yield* billing.history(accountId, operatorPurchasesShown)
        return {
          account_id: accountId,
          purchases: history.purchases.map(({ currency: _, ...purchase }) => purchase),
          subscription: history.subscription ?? null
        }
      })

      const renew = Effect.fn("Admin.renew")(function* (accountId: string) {
        if ((yield* accounts.get(accountId)) === undefined) return undefined
        const renewed = yield* checkout.renewLocal(accountId)
        const after = yield* accounts.get(accountId)
        return { account_id: accountId, ...renewed, balance_credits: after?.balanceCredits ?? 0 }
      })

      return Admin.of({
        account,
        credit,
        setPlan,
        entitle,
        setState,
        settings: settings.update,
        outbox,
        purchases,
        renew
      })
    })
  )
}
