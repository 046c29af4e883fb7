import { Schema } from "effect"
import { refundReasons } from "../domain/pricing.ts"

export const ReceiptSchema = Schema.Struct({
  id: Schema.String,
  operation: Schema.String,
  quoted: Schema.Int,
  charged: Schema.Int,
  refunds: Schema.Array(Schema.Struct({ reason: Schema.Literals(refundReasons), credits: Schema.Int })),
  funding: Schema.Struct({ free_tier: Schema.Int, grant: Schema.Int, balance: Schema.Int }),
  idempotency_key: Schema.NullOr(Schema.String),
  replayed: Schema.Boolean,
  created_at: Schema.String,
  key_id: Schema.String.annotate({
    description: "The key the call was made with (for a call through a connected app, its app id)."
  }),
  parent_key_id: Schema.optionalKey(
    Schema.String.annotate({ description: "For a child key's call: the key that made the child." })
  ),
  app_id: Schema.optionalKey(
    Schema.String.annotate({ description: "The connected app (OAuth) the call was made through, if any." })
  )
}).annotate({ identifier: "Receipt" })

export const FreshnessInfo = Schema.Struct({
  requested: Schema.Literals(["recent", "realtime"]),
  served: Schema.Literals(["recent", "realtime", "cached_fallback"]),
  fetched_at: Schema.String,
  cache_age_seconds: Schema.Int
})

/** The schema_version 2 envelope of every successful data call. */
export const envelopeOf = <K extends string, D extends Schema.Top>(kind: K, data: D) =>
  Schema.Struct({
    schema_version: Schema.Literal(2),
    kind: Schema.Literal(kind),
    data,
    freshness: FreshnessInfo,
    cost: Schema.Struct({ quoted: Schema.Int, charged: Schema.Int, refunded: Schema.Int }),
    receipt: ReceiptSchema
  })

export interface Envelope {
  readonly schema_version: 2
  readonly kind: string
  readonly data: unknown
  readonly freshness: typeof FreshnessInfo.Type
  readonly cost: { readonly quoted: number; readonly charged: number; readonly refunded: number }
  readonly receipt: typeof ReceiptSchema.Type
}
