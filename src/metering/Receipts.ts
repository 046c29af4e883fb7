import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import type { RateLimited } from "../contract/errors.ts"
import { RateLimits } from "../services/RateLimits.ts"
import * as Row from "../store/rows.ts"
import { decodeCalls, type Receipt, receiptOf } from "./receipt.ts"

/** One key's spend over a range of days: its settled calls' credits, as the receipts have them. */
export interface KeySpend {
  readonly keyId: string
  readonly label: string | null
  readonly hint: string | null
  readonly parentKeyId: string | null
  readonly credits: number
  readonly calls: number
}

const decodeKeySpend = Row.decoder(
  Schema.Struct({
    key_id: Schema.String,
    label: Schema.NullOr(Schema.String),
    hint: Schema.NullOr(Schema.String),
    parent_key_id: Schema.NullOr(Schema.String),
    credits: Row.Int,
    calls: Row.Int
  }),
  "key spend"
)

/** Where a page of receipts ends: the next page starts after it. */
export interface ReceiptCursor {
  readonly createdAt: number
  readonly id: string
}

/**
 * Whose receipts: `keyId` narrows them to one key's calls (a child key sees only its own; a parent
 * key or a management token may ask for one key's).
 */
export interface ReceiptFilter {
  readonly keyId?: string | undefined
}

/** An account's receipts (its settled calls), newest first, each naming its key and its key's parent. */
export class Receipts extends Context.Service<
  Receipts,
  {
    readonly list: (
      accountId: string,
      options: ReceiptFilter & { readonly limit: number; readonly before?: ReceiptCursor | undefined }
    ) => Effect.Effect<ReadonlyArray<Receipt & { readonly createdAtMs: number }>, SqlError>
    readonly get: (
      accountId: string,
      id: string,
      filter?: ReceiptFilter
    ) => Effect.Effect<Receipt | undefined, SqlError>
    /**
     * One page of the receipts made in `[from, to)` (epoch ms), oldest first, after `after`: the
     * export reads a range this way, one page at a time, whatever its size.
     */
    readonly range: (
      accountId: string,
      options: ReceiptFilter & {
        readonly from: number
        readonly to: number
        readonly after: ReceiptCursor | undefined
        readonly limit: number
      }
    ) => Effect.Effect<ReadonlyArray<Receipt & { readonly createdAtMs: number }>, SqlError>
    /** The account's spend by key from UTC day `fromDay` on, most spent first. */
    readonly spendByKey: (
      accountId: string,
      fromDay: number
    ) => Effect.Effect<ReadonlyArray<KeySpend>, SqlError>
    /**
     * One export of the account starts: at most EXPORTS_PER_ACCOUNT (10) a minute, RATE_LIMITED
     * (with retry_after_seconds) past them. Each reads up to a year of receipts.
     */
    readonly startExport: (accountId: string) => Effect.Effect<void, RateLimited>
  }
>()("metering/Receipts") {
  static readonly layer = Layer.effect(
    Receipts,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // Each receipt's row with its key's parent (a child key's calls name it).
      const receiptRows = sql`SELECT c.*, k.parent_key_id FROM calls c LEFT JOIN api_keys k ON k.id = c.key_id`
      const ofKey = (filter: ReceiptFilter | undefined) =>
        filter?.keyId === undefined ? sql`` : sql`AND c.key_id = ${filter.keyId}`

      const list = Effect.fn("Receipts.list")(function* (
        accountId: string,
        options: ReceiptFilter & { readonly limit: number; readonly before?: ReceiptCursor | undefined }
      ) {
        const before = options.before
        const rows = yield* before === undefined
          ? sql`${receiptRows} WHERE c.account_id = ${accountId} AND c.state = 'settled' ${ofKey(options)}
              ORDER BY c.created_at DESC, c.id DESC LIMIT ${options.limit}`
          : sql`${receiptRows} WHERE c.account_id = ${accountId} AND c.state = 'settled' ${ofKey(options)}
              AND (c.created_at < ${before.createdAt} OR (c.created_at = ${before.createdAt} AND c.id < ${before.id}))
              ORDER BY c.created_at DESC, c.id DESC LIMIT ${options.limit}`
        const calls = yield* decodeCalls(rows)
        return calls.map((row) => ({ ...receiptOf(row), createdAtMs: row.created_at }))
      })

      const get = Effect.fn("Receipts.get")(function* (
        accountId: string,
        id: string,
        filter?: ReceiptFilter
      ) {
        const rows =
          yield* sql`${receiptRows} WHERE c.id = ${id} AND c.account_id = ${accountId} AND c.state = 'settled' ${ofKey(filter)}`.pipe(
            Effect.flatMap(decodeCalls)
          )
        return rows[0] === undefined ? undefined : receiptOf(rows[0])
      })

      const range = Effect.fn("Receipts.range")(function* (
        accountId: string,
        options: ReceiptFilter & {
          readonly from: number
          readonly to: number
          readonly after: ReceiptCursor | undefined
          readonly limit: number
        }
      ) {
        const { after } = options
        // A row comparison, so the next page starts where the index says, not after a scan of the earlier ones.
        const rows = yield* after === undefined
          ? sql`${receiptRows} WHERE c.account_id = ${accountId} AND c.state = 'settled' ${ofKey(options)}
              AND c.created_at >= ${options.from} AND c.created_at < ${options.to}
              ORDER BY c.created_at, c.id LIMIT ${options.limit}`
          : sql`${receiptRows} WHERE c.account_id = ${accountId} AND c.state = 'settled' ${ofKey(options)}
              AND (c.created_at, c.id) > (${after.createdAt}, ${after.id}) AND c.created_at < ${options.to}
              ORDER BY c.created_at, c.id LIMIT ${options.limit}`
        const calls = yield* decodeCalls(rows)
        return calls.map((row) => ({ ...receiptOf(row), createdAtMs: row.created_at }))
      })

      const spendByKey = (accountId: string, fromDay: number) =>
        sql`SELECT c.key_id, k.label, k.hint, k.parent_key_id, SUM(c.charged) AS credits, COUNT(*) AS calls
          FROM calls c LEFT JOIN api_keys k ON k.id = c.key_id
          WHERE c.account_id = ${accountId} AND c.state = 'settled' AND c.day >= ${fromDay}
          GROUP BY c.key_id, k.label, k.hint, k.parent_key_id
          ORDER BY credits DESC, c.key_id`.pipe(
          Effect.flatMap(decodeKeySpend),
          Effect.map((rows) =>
            rows.map(
              (row): KeySpend => ({
                keyId: row.key_id,
                label: row.label,
                hint: row.hint,
                parentKeyId: row.parent_key_id,
                credits: row.credits,
                calls: row.calls
              })
            )
          )
        )

      const limits = yield* RateLimits
      const { exportsPerAccount } = (yield* AppConfig).policy
      const startExport = (accountId: string) =>
        limits.takeAll([{ key: `exports:${accountId}`, rule: exportsPerAccount }], "receipt export")

      return Receipts.of({ list, get, range, spendByKey, startExport })
    })
  )
}
