import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import type { RateLimited } from "../contract/errors.ts"
import { RateLimits } from "../services/RateLimits.ts"
import { decodeCalls, type Receipt, receiptOf } from "./receipt.ts"

/** Where a page of receipts ends: the next page starts after it. */
export interface ReceiptCursor {
  readonly createdAt: number
  readonly id: string
}

/** An account's receipts (its settled calls), newest first. */
export class Receipts extends Context.Service<
  Receipts,
  {
    readonly list: (
      accountId: string,
      options: { readonly limit: number; readonly before?: ReceiptCursor | undefined }
    ) => Effect.Effect<ReadonlyArray<Receipt & { readonly createdAtMs: number }>, SqlError>
    readonly get: (accountId: string, id: string) => Effect.Effect<Receipt | undefined, SqlError>
    /**
     * One page of the receipts made in `[from, to)` (epoch ms), oldest first, after `after`: the
     * export reads a range this way, one page at a time, whatever its size.
     */
    readonly range: (
      accountId: string,
      options: {
        readonly from: number
        readonly to: number
        readonly after: ReceiptCursor | undefined
        readonly limit: number
      }
    ) => Effect.Effect<ReadonlyArray<Receipt & { readonly createdAtMs: number }>, SqlError>
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

      const list = Effect.fn("Receipts.list")(function* (
        accountId: string,
        options: { readonly limit: number; readonly before?: ReceiptCursor | undefined }
      ) {
        const before = options.before
        const rows = yield* before === undefined
          ? sql`SELECT * FROM calls WHERE account_id = ${accountId} AND state = 'settled'
              ORDER BY created_at DESC, id DESC LIMIT ${options.limit}`
          : sql`SELECT * FROM calls WHERE account_id = ${accountId} AND state = 'settled'
              AND (created_at < ${before.createdAt} OR (created_at = ${before.createdAt} AND id < ${before.id}))
              ORDER BY created_at DESC, id DESC LIMIT ${options.limit}`
        const calls = yield* decodeCalls(rows)
        return calls.map((row) => ({ ...receiptOf(row), createdAtMs: row.created_at }))
      })

      const get = Effect.fn("Receipts.get")(function* (accountId: string, id: string) {
        const rows =
          yield* sql`SELECT * FROM calls WHERE id = ${id} AND account_id = ${accountId} AND state = 'settled'`.pipe(
            Effect.flatMap(decodeCalls)
          )
        return rows[0] === undefined ? undefined : receiptOf(rows[0])
      })

      const range = Effect.fn("Receipts.range")(function* (
        accountId: string,
        options: {
          readonly from: number
          readonly to: number
          readonly after: ReceiptCursor | undefined
          readonly limit: number
        }
      ) {
        const { after } = options
        // A row comparison, so the next page starts where the index says, not after a scan of the earlier ones.
        const rows = yield* after === undefined
          ? sql`SELECT * FROM calls WHERE account_id = ${accountId} AND state = 'settled'
              AND created_at >= ${options.from} AND created_at < ${options.to}
              ORDER BY created_at, id LIMIT ${options.limit}`
          : sql`SELECT * FROM calls WHERE account_id = ${accountId} AND state = 'settled'
              AND (created_at, id) > (${after.createdAt}, ${after.id}) AND created_at < ${options.to}
              ORDER BY created_at, id LIMIT ${options.limit}`
        const calls = yield* decodeCalls(rows)
        return calls.map((row) => ({ ...receiptOf(row), createdAtMs: row.created_at }))
      })

      const limits = yield* RateLimits
      const { exportsPerAccount } = (yield* AppConfig).policy
      const startExport = (accountId: string) =>
        limits.takeAll([{ key: `exports:${accountId}`, rule: exportsPerAccount }], "receipt export")

      return Receipts.of({ list, get, range, startExport })
    })
  )
}
