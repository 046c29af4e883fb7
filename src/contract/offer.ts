import { Schema } from "effect"

/**
 * One way to pay under x402 (protocol v2): the EIP-3009 `exact` scheme for this many token units,
 * or (a data call's, where `X402_SCHEMES` offers it) the Permit2 `upto` scheme for at most this
 * many, of which only the call's shortfall is settled.
 */
export const X402Requirements = Schema.Struct({
  scheme: Schema.String,
  network: Schema.String,
  amount: Schema.String,
  asset: Schema.String,
  payTo: Schema.String,
  maxTimeoutSeconds: Schema.Int,
  extra: Schema.Record(Schema.String, Schema.Unknown)
}).annotate({ identifier: "X402PaymentRequirements" })

/**
 * x402's `PaymentRequired` (protocol v2), also sent base64-encoded as the `PAYMENT-REQUIRED`
 * header: pay one of `accepts` and retry the same request with `PAYMENT-SIGNATURE`.
 */
export const X402PaymentRequired = Schema.Struct({
  x402Version: Schema.Literal(2),
  error: Schema.optionalKey(Schema.String),
  resource: Schema.Struct({
    url: Schema.String,
    description: Schema.optionalKey(Schema.String),
    mimeType: Schema.optionalKey(Schema.String)
  }),
  accepts: Schema.Array(X402Requirements)
}).annotate({ identifier: "X402PaymentRequired" })
export type X402PaymentRequired = typeof X402PaymentRequired.Type

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
  refund_policy: Schema.String,
  /** Where the x402 rail is offered: the payment that buys the credits this call lacks, paid inside the retry. */
  x402: Schema.optionalKey(X402PaymentRequired)
})
export type Offer = typeof Offer.Type
