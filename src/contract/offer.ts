import { Schema } from "effect"

/** What a payment-fixable error offers: the packs, the configured rails, where to pay and how to resume. */
export const Offer = Schema.Struct({
  offer_version: Schema.Literal(1),
  reason: Schema.String,
  currency: Schema.Literal("usd"),
  packs: Schema.Array(
    Schema.Struct({
      pack: Schema.String,
      mode: Schema.String,
      price_usd_cents: Schema.Int,
      credits: Schema.optionalKey(Schema.Int),
      credits_per_month: Schema.optionalKey(Schema.Int)
    })
  ),
  rails: Schema.Array(Schema.String),
  checkout_url: Schema.String,
  resume: Schema.Struct({
    action: Schema.Literals(["retry_same_idempotency_key", "retry_fresh_idempotency_key", "wait_and_retry"]),
    detail: Schema.String
  }),
  refund_policy: Schema.String
})
export type Offer = typeof Offer.Type
