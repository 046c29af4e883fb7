import { Effect, Option, Schema, Stream } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../../config.ts"
import { BaseApi } from "../../contract/api.ts"
import { ReceiptSchema } from "../../contract/envelope.ts"
import { type ApiError, InvalidInput } from "../../contract/errors.ts"
import { Governing } from "../../contract/governance.ts"
import type { Governor } from "../../domain/accounts.ts"
import { managementTokenPattern } from "../../domain/secrets.ts"
import { msPerDay } from "../../domain/time.ts"
import { Bearers, selectAccount } from "../../identity/Bearers.ts"
import { ReceiptSigner } from "../../metering/ReceiptSigner.ts"
import { Receipts } from "../../metering/Receipts.ts"
import type { Receipt } from "../../metering/receipt.ts"
import type { AnyOperation } from "../../operations/Operation.ts"
import * as management from "../common/management.ts"
import { Problems } from "../common/problems.ts"
import { csvHeader, csvRow } from "../common/receiptCsv.ts"
import { receiptKeyOf } from "../common/receiptScope.ts"
import { answering, bearerOf } from "./governanceRoutes.ts"

/** Webhooks and automatic top-up: the management surface's steps (`common/management.ts`). */
export const WebhooksRoutes = HttpApiBuilder.group(BaseApi, "webhooks", (handlers) =>
  Effect.gen(function* () {
    const answer = answering(yield* Problems)
    const governed = <A, E extends ApiError | { readonly _tag: "SqlError" }, R>(
      step: (governor: Governor) => Effect.Effect<A, E, R>
    ) =>
      answer(
        Effect.gen(function* () {
          return yield* step(yield* Governing)
        })
      )
    return handlers
      .handle("listWebhooks", ({ query }) => governed((governor) => management.listWebhooks(governor, query)))
      .handle("createWebhook", ({ payload, query }) =>
        governed((governor) =>
          management.createWebhook(governor, {
            ...payload,
            account_id: payload.account_id ?? query.account_id
          })
        )
      )
      .handle("deleteWebhook", ({ payload, query }) =>
        governed((governor) =>
          management.deleteWebhook(governor, {
            ...payload,
            account_id: payload.account_id ?? query.account_id
          })
        )
      )
      .handle("testWebhook", ({ payload, query }) =>
        governed((governor) =>
          management.testWebhook(governor, { ...payload, account_id: payload.account_id ?? query.account_id })
        )
      )
      .handle("listWebhookDeliveries", ({ params, query }) =>
        governed((governor) =>
          management.webhookDeliveries(governor, {
            webhook_id: params.webhook_id,
            account_id: query.account_id,
            limit: query.limit
          })
        )
      )
      .handle("getTopup", ({ query }) => governed((governor) => management.showTopup(governor, query)))
      .handle("setTopup", ({ payload, query }) =>
        governed((governor) =>
          management.setTopup(governor, { ...payload, account_id: payload.account_id ?? query.account_id })
        )
      )
  })
)

/** A UTC day's first millisecond; undefined for text that is not a real day. */
const dayStart = (day: string) => {
  const ms = Date.parse(`${day}T00:00:00Z`)
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== day ? undefined : ms
}

/**
 * `GET /v1/receipts/export`: every receipt of a range as CSV or JSON Lines, streamed in constant
 * memory: the receipts are read a page at a time (`Receipts.range`, a keyset cursor over the
 * calls table) and each page is written to the response before the next is read. A failure once
 * the answer has started can only cut it short: the file then ends without its last line's
 * newline.
 */
export const ExportRoutes = <R>(operations: ReadonlyArray<AnyOperation<R>>) =>
  HttpApiBuilder.group(BaseApi, "export", (handlers) =>
    Effect.gen(function* () {
      const answer = answering(yield* Problems)
      const bearers = yield* Bearers
      const receipts = yield* Receipts
      const signer = yield* ReceiptSigner
      const served = Schema.encodeSync(ReceiptSchema)
      const { policy } = yield* AppConfig
      const platformOf = new Map(operations.map((operation) => [operation.id, operation.platform]))

      /**
       * The account the bearer may export (a spend key's, or one a management token governs), and
       * whose receipts in it (`receiptKeyOf`: a child key only its own).
       */
      const scopeOf = (
        bearer: string | undefined,
        accountId: string | undefined,
        keyId: string | undefined
      ) =>
        bearer !== undefined && managementTokenPattern.test(bearer)
          ? Effect.map(
              Effect.flatMap(bearers.governor(bearer), (governor) => selectAccount(governor, accountId)),
              (account) => ({ account, keyId: receiptKeyOf(undefined, keyId) })
            )
          : Effect.map(bearers.authenticate(bearer ?? ""), (principal) => ({
              account: principal.account,
              keyId: receiptKeyOf(principal.key, keyId)
            }))

      /** A page of the range's receipts, each signed as GET /v1/receipts/{id} serves it, as lines. */
      const linesOf =
        (format: "csv" | "jsonl") => (rows: ReadonlyArray<Receipt & { readonly createdAtMs: number }>) =>
          Effect.map(
            signer.signAll(rows.map(({ createdAtMs: _, ...receipt }) => served(receipt))),
            (signed) =>
              signed
                .map((receipt) =>
                  format === "csv"
                    ? `${csvRow(receipt, platformOf.get(receipt.operation) ?? "")}\r\n`
                    : `${JSON.stringify(receipt)}\n`
                )
                .join("")
          )

      return handlers.handle("exportReceipts", ({ query }) =>
        answer(
          Effect.gen(function* () {
            const request = yield* HttpServerRequest.HttpServerRequest
            const { account, keyId } = yield* scopeOf(bearerOf(request), query.account_id, query.key_id)
            const from = dayStart(query.from)
            if (from === undefined)
              return yield* new InvalidInput({
                message: `${query.from} is not a UTC day (YYYY-MM-DD).`,
                param: "from"
              })
            const toDay = dayStart(query.to)
            if (toDay === undefined)
              return yield* new InvalidInput({
                message: `${query.to} is not a UTC day (YYYY-MM-DD).`,
                param: "to"
              })
            if (toDay < from)
              return yield* new InvalidInput({ message: "`to` is before `from`.", param: "to" })
            const days = (toDay - from) / msPerDay + 1
            if (days > policy.exportMaxDays)
              return yield* new InvalidInput({
                message: `The range is ${days} days; one export covers at most ${policy.exportMaxDays}. Export it in parts.`,
                param: "to"
              })
            yield* receipts.startExport(account.id)
            const format = query.format ?? "csv"
            const lines = linesOf(format)
            const to = toDay + msPerDay
            type After = { readonly createdAt: number; readonly id: string } | undefined
            // One page per pull: the next is read only once the response has taken this one.
            const pages = Stream.paginate(undefined as After, (after) =>
              Effect.flatMap(
                keyId === null
                  ? Effect.succeed([])
                  : receipts.range(account.id, { from, to, after, limit: policy.exportPageRows, keyId }),
                (rows) =>
                  Effect.map(lines(rows), (text) => {
                    const last = rows[rows.length - 1]
                    return [
                      text.length === 0 ? [] : [text],
                      rows.length < policy.exportPageRows || last === undefined
                        ? Option.none<After>()
                        : Option.some<After>({ createdAt: last.createdAtMs, id: last.id })
                    ] as const
                  })
              )
            )
            const body =
              format === "csv" ? Stream.concat(Stream.make(`${csvHeader.join(",")}\r\n`), pages) : pages
            const name = `receipts-${account.id}-${query.from}-${query.to}.${format}`
            return HttpServerResponse.stream(Stream.encodeText(body), {
              contentType: format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson",
              headers: {
                "content-disposition": `attachment; filename="${name}"`,
                "cache-control": "no-store",
                "x-content-type-options": "nosniff"
              }
            })
          })
        )
      )
    })
  )
