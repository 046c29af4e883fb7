import { Clock, Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { platforms } from "../../../domain/plans.ts"
import { dayOf } from "../../../domain/time.ts"
import { type KeySpend, Receipts } from "../../../metering/Receipts.ts"
import type { AnyOperation } from "../../../operations/Operation.ts"
import { csvHeader, csvRow } from "../../common/receiptCsv.ts"
import { html } from "../pages/html.ts"
import { type DayUsage, usageChart, usageTable } from "./chart.ts"
import { dashboardGuard } from "./guard.ts"
import { dashboardPage, dateOf, errorNote, type Frame, hidden } from "./layout.ts"
import {
  dayPattern,
  decodeCursor,
  type ListedReceipt,
  type ReceiptFilter,
  receiptPage,
  usageByDay
} from "./receipts.ts"
import { usageReporter } from "./report.ts"

const receiptsPerPage = 25
/** How many receipts one page view reads at most (the per-platform split, a filtered page). */
const maxScanned = 5_000
const maxCsvRows = 10_000

const receiptRow = (receipt: ListedReceipt) =>
  html`<tr><td><code>${receipt.id}</code></td><td>${dateOf(receipt.created_at)}</td><td>${receipt.operation}</td><td><code>${receipt.key_id}</code>${receipt.parent_key_id === undefined ? "" : html` (child of <code>${receipt.parent_key_id}</code>)`}</td><td class="n">${receipt.charged}</td><td class="n">${receipt.funding.free_tier}/${receipt.funding.grant}/${receipt.funding.balance}</td></tr>`

export interface ReceiptView {
  readonly receipts: ReadonlyArray<ListedReceipt>
  readonly next: string | undefined
  readonly operation: string | undefined
  readonly day: string | undefined
  readonly paged: boolean
}

const receiptsSection = (
  frame: Frame,
  operations: ReadonlyArray<string>,
  view: ReceiptView,
  error?: string
) => {
  const base = `${frame.baseUrl}/dashboard`
  const filters = new URLSearchParams({ account: frame.account.id })
  if (view.operation !== undefined) filters.set("operation", view.operation)
  if (view.day !== undefined) filters.set("date", view.day)
  const older = new URLSearchParams(filters)
  if (view.next !== undefined) older.set("before", view.next)
  return html`<section aria-labelledby="receipts"><h2 id="receipts">Receipts</h2>
<form method="get" action="${base}/usage" class="row">${hidden("account", frame.account.id)}
<div><label for="operation">Operation</label><select id="operation" name="operation"><option value="">All operations</option>${operations.map(
    (operation) =>
      html`<option value="${operation}"${operation === view.operation ? html` selected` : ""}>${operation}</option>`
  )}</select></div>
<div><label for="date">Day (UTC)</label><input id="date" name="date" type="date" value="${view.day ?? ""}"></div>
<button type="submit">Filter</button></form>
${errorNote(error)}
${
  view.receipts.length === 0
    ? html`<p>${
        view.operation === undefined && view.day === undefined
          ? view.paged
            ? "No older receipts."
            : "No receipts yet: every charged call leaves one. Make a call with one of your keys, then reload this page."
          : "No receipt matches these filters. Choose another operation or day, or clear them."
      }</p>`
    : html`<table tabindex="0"><caption>Receipts, newest first</caption>
<thead><tr><th scope="col">Receipt</th><th scope="col">When</th><th scope="col">Operation</th><th scope="col">Key</th><th scope="col">Credits</th><th scope="col">Free/grant/purchased</th></tr></thead>
<tbody>${view.receipts.map(receiptRow)}</tbody></table>`
}
<p>${view.paged ? html`<a href="${base}/usage?${filters.toString()}#receipts">Newest</a> · ` : ""}${
    view.next === undefined
      ? ""
      : html`<a href="${base}/usage?${older.toString()}#receipts">Older receipts</a> · `
  }<a href="${base}/receipts.csv?${filters.toString()}">Download these receipts as CSV</a></p></section>`
}

const keyName = (spend: KeySpend) =>
  spend.label === null && spend.hint === null
    ? html`<code>${spend.keyId}</code>`
    : html`${spend.label ?? ""}${spend.label === null ? "" : " "}<code>${spend.hint ?? spend.keyId}</code>${
        spend.parentKeyId === null ? "" : html` (child of <code>${spend.parentKeyId}</code>)`
      }`

/** Who spent: credits and calls of each key (a sub-agent's child key on its own line) over the 30 days. */
const keysSection = (spends: ReadonlyArray<KeySpend>) =>
  html`<section aria-labelledby="per-key"><h2 id="per-key">Credits by key, last 30 days</h2>
${
  spends.length === 0
    ? html`<p>No key has spent credits in the last 30 days.</p>`
    : html`<table tabindex="0"><caption>Credits by key, most first</caption>
<thead><tr><th scope="col">Key</th><th scope="col">Credits</th><th scope="col">Calls</th></tr></thead>
<tbody>${spends.map(
        (spend) =>
          html`<tr><td>${keyName(spend)}</td><td class="n">${spend.credits}</td><td class="n">${spend.calls}</td></tr>`
      )}</tbody></table>`
}</section>`

/** Usage: the 30-day chart with its table, the spend by key, then the receipts. */
export const usagePage = (
  frame: Frame,
  days: ReadonlyArray<DayUsage>,
  spends: ReadonlyArray<KeySpend>,
  platforms: ReadonlyArray<string>,
  operations: ReadonlyArray<string>,
  receipts: ReceiptView,
  error?: string
) => {
  const shown = platforms.filter((platform) => days.some((day) => (day.byPlatform[platform] ?? 0) > 0))
  const columns = shown.length === 0 ? platforms.slice(0, 1) : shown
  return dashboardPage(
    frame,
    "usage",
    "Usage",
    html`<section aria-labelledby="per-day"><h2 id="per-day">Credits per day, by platform</h2>
${usageChart(days, columns)}
${usageTable(days, columns)}</section>
${keysSection(spends)}
${receiptsSection(frame, operations, receipts, error)}`
  )
}

/** `/dashboard/usage` (the chart, its table, the receipts) and `/dashboard/receipts.csv`. */
export const UsageRoutes = <R>(operations: ReadonlyArray<AnyOperation<R>>) =>
  HttpRouter.use((router) =>
    Effect.gen(function* () {
      const guard = yield* dashboardGuard([])
      const reportFor = yield* usageReporter
      const services = yield* Effect.context<Receipts>()
      const platformByOperation = new Map(operations.map((operation) => [operation.id, operation.platform]))
      const platformOf = (operation: string) => platformByOperation.get(operation) ?? "other"
      const operationIds = operations.map((operation) => operation.id).sort()
      const chartPlatforms = [...platforms, "other", "unsplit"]

      /** The filters of the query; one that makes no sense is dropped, and the page says so. */
      const filterOf = (query: URLSearchParams): ReceiptFilter & { readonly error?: string } => {
        const operation = query.get("operation")?.trim() || undefined
        const day = query.get("date")?.trim() || undefined
        const badDay =
          day !== undefined && (!dayPattern.test(day) || Number.isNaN(Date.parse(`${day}T00:00:00Z`)))
        const badOperation = operation !== undefined && !operationIds.includes(operation)
        return {
          operation: badOperation ? undefined : operation,
          day: badDay ? undefined : day,
          ...(badDay || badOperation
            ? {
                error: badDay
                  ? "The day must be a date like 2026-11-23; showing every day."
                  : "There is no such operation; showing every operation."
              }
            : {})
        }
      }

      yield* router.add(
        "GET",
        "/dashboard/usage",
        guard
          .signedInPage((frame, governor, query) =>
            Effect.gen(function* () {
              const report = yield* reportFor(governor, frame.account)
              const now = yield* Clock.currentTimeMillis
              const days = yield* usageByDay(frame.account.id, now, report.history, platformOf, maxScanned)
              const spends = yield* (yield* Receipts).spendByKey(frame.account.id, dayOf(now) - 29)
              const filter = filterOf(query)
              const before = decodeCursor(query.get("before") ?? "")
              const page = yield* receiptPage(frame.account.id, filter, {
                limit: receiptsPerPage,
                before,
                maxScanned
              })
              return guard.respond(
                usagePage(
                  frame,
                  days,
                  spends,
                  chartPlatforms,
                  operationIds,
                  { ...page, operation: filter.operation, day: filter.day, paged: before !== undefined },
                  filter.error
                )
              )
            })
          )
          .pipe(Effect.provideContext(services))
      )

      yield* router.add(
        "GET",
        "/dashboard/receipts.csv",
        guard
          .signedInPage((frame, _governor, query) =>
            Effect.gen(function* () {
              const page = yield* receiptPage(frame.account.id, filterOf(query), {
                limit: maxCsvRows,
                before: undefined,
                maxScanned: maxCsvRows * 2
              })
              const rows = [
                csvHeader.join(","),
                ...page.receipts.map((r) => csvRow(r, platformOf(r.operation)))
              ]
              return HttpServerResponse.text(`${rows.join("\r\n")}\r\n`, {
                contentType: "text/csv; charset=utf-8",
                headers: {
                  "content-disposition": `attachment; filename="receipts-${frame.account.id}.csv"`,
                  "cache-control": "no-store",
                  "x-content-type-options": "nosniff"
                }
              })
            })
          )
          .pipe(Effect.provideContext(services))
      )
    })
  )
