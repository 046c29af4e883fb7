import type { ReceiptSchema } from "../../contract/envelope.ts"

/**
 * Receipts as CSV, for every surface that writes them (the dashboard's download, the export): one
 * line per receipt, each cell quoted when it must be and defused when a spreadsheet would read it
 * as a formula (OWASP's CSV injection advice: a leading `=`, `+`, `-`, `@`, tab or return gets a `'`).
 */

/** A spreadsheet cell: quoted, and a leading formula character defused. */
const cell = (value: string | number | boolean | null) => {
  const text = value === null ? "" : String(value)
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe
}

export const csvHeader = [
  "receipt_id",
  "created_at",
  "operation",
  "platform",
  "quoted",
  "charged",
  "free_tier",
  "grant",
  "balance",
  "refunded",
  "idempotency_key",
  "signature"
]

/** A receipt's line; its `signature` (empty when unsigned) signs the receipt's JSON, not this line. */
export const csvRow = (receipt: typeof ReceiptSchema.Type, platform: string) =>
  [
    receipt.id,
    receipt.created_at,
    receipt.operation,
    platform,
    receipt.quoted,
    receipt.charged,
    receipt.funding.free_tier,
    receipt.funding.grant,
    receipt.funding.balance,
    receipt.quoted - receipt.charged,
    receipt.idempotency_key,
    receipt.signature ?? null
  ]
    .map(cell)
    .join(",")
