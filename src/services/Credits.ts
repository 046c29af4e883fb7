import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import type { Pack } from "../domain/plans.ts"
import { mailboxOf } from "../domain/signIn.ts"
import { Audit } from "./Audit.ts"
import { Ids } from "./Ids.ts"
import { KeyMemory } from "./KeyMemory.ts"
import { WebhookEvents } from "./WebhookEvents.ts"

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
  /** A payment settled on a chain (the x402 rail): who paid, where, what, and its transaction. */
  readonly onChain?: OnChainPayment | undefined
}

export interface OnChainPayment {
  readonly payer: string
  readonly network: string
  readonly asset: string
  /** The amount in the token's own units, exact. */
  readonly amountAtomic: string
  readonly transaction: string
}

/**
 * Credits coming into accounts: the operator's credit, the one-time claim grant and purchases.
 * Each is a credit event (the other side of every debit) and `svc_add_credits`, which also re-arms
 * the balance alert; each joins the caller's transaction.
 */
export class Credits extends Context.Service<
  Credits,
  {
    /** Adds credits to an account's grant or purchased balance. False: no such account. */
    readonly credit: (input: CreditInput) => Effect.Effect<boolean, SqlError>
    /**
     * The one-time claim grant for an account, its owner's email and a key: once per mailbox
     * (`mailboxOf`: `farm+1@` and `f.arm@gmail.com` are `farm@`'s) and once per key (the database's
     * unique constraints decide, also under concurrent sign-ins).
     * Returns the credits granted, 0 when either already had it.
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
     * the pack's plan (`flex` never lowers `production`). Returns whether this call applied it.
     */
    readonly applyPurchase: (input: PurchaseInput) => Effect.Effect<boolean, SqlError>
  }
>()("services/Credits") {
  static readonly layer = Layer.effect(
    Credits,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const ids = yield* Ids
      const keyMemory = yield* KeyMemory
      const events = yield* WebhookEvents
      const audit = yield* Audit
      const { policy } = yield* AppConfig

      /** The statements of a credit, inside the caller's transaction. */
      const addCredits = (input: CreditInput, now: number) =>
        Effect.gen(function* () {
          const id = yield* ids.newId("cred")
          const grant = input.kind === "grant" ? input.credits : 0
          const balance = input.kind === "balance" ? input.credits : 0
          const [added] = yield* sql<{
            readonly added: boolean
          }>`SELECT svc_add_credits(${input.accountId}, ${grant}, ${balance}) AS added`
          if (added?.added !== true) return false
          yield* sql`INSERT INTO credit_events (id, account_id, kind, credits, reason, created_at)
            VALUES (${id}, ${input.accountId}, ${input.kind}, ${input.credits}, ${input.reason}, ${now})`
          return true
        })

      const credit = Effect.fn("Credits.credit")(function* (input: CreditInput) {
        const now = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(addCredits(input, now))
      })

      const grantOnce = Effect.fn("Credits.grantOnce")(function* (input: {
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

      const applyPurchase = Effect.fn("Credits.applyPurchase")(function* (input: PurchaseInput) {
        const now = yield* Clock.currentTimeMillis
        const id = yield* ids.newId("pur")
        const credits = input.pack.credits ?? input.pack.credits_per_month ?? 0
        const { onChain } = input
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const inserted =
              yield* sql`INSERT INTO purchases (id, account_id, pack, rail, payment_ref, credits,
                price_usd_cents, currency, period_end, created_at, payer, network, asset, amount_atomic,
                transaction_hash)
              VALUES (${id}, ${input.accountId}, ${input.pack.pack}, ${input.rail}, ${input.paymentRef}, ${credits},
                ${input.pack.price_usd_cents}, 'usd', ${input.periodEnd ?? null}, ${now}, ${onChain?.payer ?? null},
                ${onChain?.network ?? null}, ${onChain?.asset ?? null}, ${onChain?.amountAtomic ?? null},
                ${onChain?.transaction ?? null})
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
            yield* audit.record(input.accountId, "credits.purchased", id)
            yield* events.emit(input.accountId, "credits.purchased", {
              purchase_id: id,
              pack: input.pack.pack,
              rail: input.rail,
              credits,
              price_usd_cents: input.pack.price_usd_cents,
              currency: "usd",
              ...(input.periodEnd === undefined
                ? {}
                : { period_end: new Date(input.periodEnd).toISOString() }),
              ...(onChain === undefined
                ? {}
                : { payer: onChain.payer, network: onChain.network, transaction: onChain.transaction })
            })
            return true
          })
        )
      })

      return Credits.of({ credit, grantOnce, applyPurchase })
    })
  )
}
