import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { decodeSubscription } from "../services/Usage.ts"
import * as Row from "../store/rows.ts"

/** A purchase as the billing portal and the operator read it. */
const PurchaseRow = Schema.Struct({
  id: Schema.String,
  pack: Schema.String,
  rail: Schema.String,
  payment_ref: Schema.String,
  credits: Row.Int,
  price_usd_cents: Row.Int,
  currency: Schema.String,
  period_end: Row.NullableInt,
  created_at: Row.Int,
  /** A payment settled on a chain (the x402 rail): the payer, the CAIP-2 network, the transaction. */
  payer: Schema.NullOr(Schema.String),
  network: Schema.NullOr(Schema.String),
  transaction_hash: Schema.NullOr(Schema.String)
})
export type Purchase = typeof PurchaseRow.Type
const decodePurchases = Row.decoder(PurchaseRow, "purchases")

export interface BillingHistory {
  /** Newest first. */
  readonly purchases: ReadonlyArray<Purchase>
  /** The active subscription, else the one that ended last. */
  readonly subscription: Effect.Success<ReturnType<typeof decodeSubscription>>[number] | undefined
}

/** An account's purchases and subscription, as the billing portal and the operator read them. */
export class Billing extends Context.Service<
  Billing,
  { readonly history: (accountId: string, limit: number) => Effect.Effect<BillingHistory, SqlError> }
>()("payments/Billing") {
  static readonly layer = Layer.effect(
    Billing,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const history = Effect.fn("Billing.history")(function* (accountId: string, limit: number) {
        const purchases = yield* sql`SELECT id, pack, rail, payment_ref, credits, price_usd_cents, currency,
            period_end, created_at, payer, network, transaction_hash
          FROM purchases WHERE account_id = ${accountId}
          ORDER BY created_at DESC, id DESC LIMIT ${limit}`.pipe(Effect.flatMap(decodePurchases))
        const [subscription] = yield* sql`SELECT pack, rail, status, current_period_end, cancel_at_period_end
          FROM subscriptions WHERE account_id = ${accountId}
          ORDER BY (status = 'active') DESC, created_at DESC, id DESC LIMIT 1`.pipe(
          Effect.flatMap(decodeSubscription)
        )
        return { purchases, subscription } satisfies BillingHistory
      })
      return Billing.of({ history })
    })
  )
}
