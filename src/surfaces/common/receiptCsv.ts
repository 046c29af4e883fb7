import type { Receipt } from "../../metering/receipt.ts"

/**
 * Receipts as CSV, for every surface that writes them (the dashboard's download, the export): one
 * line per receipt, each cell quoted when it must be and defused when a spreadsheet would read it
 * as a formula (OWASP's CSV injection advice: a leading `=`, `+`, `-`, `@`, tab or return gets a `'`).
 * Spreadsheets skip leading whitespace and read the full-width and small forms of these signs (and
 * the minus sign U+2212) as the signs themselves: so a formula sign after any leading Unicode
 * whitespace or invisible character, in any of those forms, is defused too.
 */

/** Leading whitespace (any Unicode space, tab, line break) and zero-width characters, then a formula sign. */
const formula = /^[\s\u200B-\u200D\u2060\uFEFF]*[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20\uFE62\uFE63\uFE66\u2212]/u

/** A spreadsheet cell: quoted, and a formula sign at its start (after any whitespace) defused. */
export const csvCell = (value: string | number | boolean | null) => {
  const text = value === null ? "" : String(value)
  const safe = formula.test(text) ? `'${text}` : text
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
  "key_id",
  "parent_key_id"
]

export const csvRow = (receipt: Receipt, platform: string) =>
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
    receipt.key_id,
    receipt.parent_key_id ?? null
  ]
    .map(csvCell)
    .join(",")
