import { Schema } from "effect"
import type { Envelope, FreshnessInfo, ReceiptSchema } from "../contract/envelope.ts"
import { refundReasons } from "../domain/pricing.ts"
import * as Row from "../store/rows.ts"

/** A receipt, as the contract's schema states it (`ReceiptSchema`). */
export type Receipt = typeof ReceiptSchema.Type

/** Where a charge's credits came from (the database's `svc_draw` decides the split). */
export type Funding = Receipt["funding"]

const RefundRow = Schema.Struct({
  reason: Schema.Literals(refundReasons),
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
  created_at: Row.Int,
  /** The call's key's parent, where a listing joined it (`api_keys.parent_key_id`). */
  parent_key_id: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type CallRow = typeof CallRow.Type

export const decodeCalls = Row.decoder(CallRow, "calls")

/**
 * The receipt of a call: the only place a receipt is made, for a first answer, a replay or a
 * listing. `parentKeyId` is the parent of the call's key when the row does not carry it (the
 * charge's own row: the caller knows its key's parent).
 */
export const receiptOf = (
  row: CallRow,
  replayed = false,
  parentKeyId: string | undefined = row.parent_key_id ?? undefined
): Receipt => ({
  id: row.id,
  operation: row.operation,
  quoted: row.quoted,
  charged: row.charged,
  refunds: row.refunds,
  funding: { free_tier: row.charged_free, grant: row.charged_grant, balance: row.charged_balance },
  idempotency_key: row.idempotency_key,
  replayed,
  created_at: new Date(row.created_at).toISOString(),
  key_id: row.key_id,
  ...(parentKeyId === undefined ? {} : { parent_key_id: parentKeyId }),
  ...(row.key_id.startsWith("app_") ? { app_id: row.key_id } : {})
})

/**
 * What a call's run produced, as an Idempotency-Key stores it: the envelope without its cost and
 * receipt, which are made from the call's row when it is answered (first time or replayed).
 */
export interface CallResult {
  readonly schema_version: 2
  readonly kind: string
  readonly data: unknown
  readonly freshness: typeof FreshnessInfo.Type
}

const costOf = (receipt: Receipt) => ({
  quoted: receipt.quoted,
  charged: receipt.charged,
  refunded: receipt.quoted - receipt.charged
})

/** The envelope of a result with its receipt: the only place an envelope is made. */
export const envelopeOf = (result: CallResult, receipt: Receipt): Envelope => ({
  ...result,
  cost: costOf(receipt),
  receipt
})

/**
 * `JSON.stringify(envelopeOf(result, receipt))` from the result's JSON, which the call made already
 * to store it: the same members in the same order, without serialising the data twice.
 */
export const envelopeJson = (resultJson: string, receipt: Receipt): string =>
  `${resultJson.slice(0, -1)},"cost":${JSON.stringify(costOf(receipt))},"receipt":${JSON.stringify(receipt)}}`
