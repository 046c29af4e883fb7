import { Effect } from "effect"
import { dayOf, dayToIso, msPerDay } from "../../../domain/time.ts"
import { Receipts } from "../../../metering/Receipts.ts"
import type { Receipt } from "../../../metering/receipt.ts"
import type { DayUsage } from "./chart.ts"

export type ListedReceipt = Receipt & { readonly createdAtMs: number }

interface Cursor {
  readonly createdAt: number
  readonly id: string
}

/** `before=<millis>.<id>`: where the next (older) page starts. */
export const encodeCursor = (receipt: Cursor) => `${receipt.createdAt}.${receipt.id}`
export const decodeCursor = (text: string): Cursor | undefined => {
  const match = /^(\d{1,15})\.([\w-]{1,100})$/.exec(text)
  return match === null ? undefined : { createdAt: Number(match[1]), id: match[2]! }
}

export const dayPattern = /^\d{4}-\d{2}-\d{2}$/

export interface ReceiptFilter {
  readonly operation: string | undefined
  /** A UTC day, `YYYY-MM-DD`. */
  readonly day: string | undefined
}

const batch = 200

/**
 * One page of an account's receipts, newest first, filtered by operation and day. The ledger pages
 * by cursor without filters, so this reads batches until the page is full, the day is passed, or
 * `maxScanned` receipts were read (then `next` resumes the scan where it stopped).
 */
export const receiptPage = (
  accountId: string,
  filter: ReceiptFilter,
  options: { readonly limit: number; readonly before: Cursor | undefined; readonly maxScanned: number }
) =>
  Effect.gen(function* () {
    const receipts = yield* Receipts
    const dayStart = filter.day === undefined ? undefined : Date.parse(`${filter.day}T00:00:00Z`)
    // The cursor `(dayEnd, "")` reads from the last millisecond of the day down.
    let cursor: Cursor | undefined =
      dayStart === undefined
        ? options.before
        : options.before !== undefined && options.before.createdAt < dayStart + msPerDay
          ? options.before
          : { createdAt: dayStart + msPerDay, id: "" }
    const found: Array<ListedReceipt> = []
    let scanned = 0
    while (scanned < options.maxScanned) {
      const rows: ReadonlyArray<ListedReceipt> = yield* receipts.list(accountId, {
        limit: batch,
        before: cursor
      })
      for (const row of rows) {
        scanned++
        if (dayStart !== undefined && row.createdAtMs < dayStart) return { receipts: found, next: undefined }
        cursor = { createdAt: row.createdAtMs, id: row.id }
        if (filter.operation === undefined || row.operation === filter.operation) {
          found.push(row)
          if (found.length > options.limit) {
            const last = found[options.limit - 1]!
            return {
              receipts: found.slice(0, options.limit),
              next: encodeCursor({ createdAt: last.createdAtMs, id: last.id })
            }
          }
        }
      }
      if (rows.length < batch) return { receipts: found, next: undefined }
    }
    // The scan stopped early: the next page resumes after the last receipt read.
    return { receipts: found, next: cursor === undefined ? undefined : encodeCursor(cursor) }
  })

/**
 * Credits per day for the 30 days ending today, by platform. The daily totals are the ledger's own
 * (`history`); the split comes from the receipts of those days, up to `maxScanned` of them, and
 * what the scanned receipts do not cover is shown as `unsplit`.
 */
export const usageByDay = (
  accountId: string,
  now: number,
  history: ReadonlyArray<{ readonly day: string; readonly credits: number; readonly calls: number }>,
  platformOf: (operation: string) => string,
  maxScanned: number
) =>
  Effect.gen(function* () {
    const receipts = yield* Receipts
    const today = dayOf(now)
    const firstDay = today - 29
    const split = new Map<string, Record<string, number>>()
    let cursor: Cursor | undefined
    let scanned = 0
    scan: while (scanned < maxScanned) {
      const rows = yield* receipts.list(accountId, { limit: batch, before: cursor })
      for (const row of rows) {
        scanned++
        if (dayOf(row.createdAtMs) < firstDay) break scan
        cursor = { createdAt: row.createdAtMs, id: row.id }
        const day = dayToIso(dayOf(row.createdAtMs))
        const platforms = split.get(day) ?? {}
        const platform = platformOf(row.operation)
        platforms[platform] = (platforms[platform] ?? 0) + row.charged
        split.set(day, platforms)
      }
      if (rows.length < batch) break
    }
    const days: Array<DayUsage> = []
    for (let day = firstDay; day <= today; day++) {
      const iso = dayToIso(day)
      const totals = history.find((entry) => entry.day === iso)
      const byPlatform = { ...split.get(iso) }
      const total = totals?.credits ?? 0
      const explained = Object.values(byPlatform).reduce((sum, credits) => sum + credits, 0)
      if (total > explained) byPlatform.unsplit = total - explained
      days.push({ day: iso, byPlatform, total, calls: totals?.calls ?? 0 })
    }
    return days
  })
