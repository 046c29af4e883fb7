import { Clock, Effect, Layer } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import type { Account, Governor } from "../../../domain/accounts.ts"
import { platforms } from "../../../domain/plans.ts"
import type { AnyOperation } from "../../../operations/Operation.ts"
import { Checkout } from "../../../payments/Checkout.ts"
import type { PaymentRails } from "../../../payments/PaymentRail.ts"
import { Keys } from "../../../services/Keys.ts"
import type { Ledger } from "../../../services/Ledger.ts"
import { Usage } from "../../../services/Usage.ts"
import { billingPortal, createKey, revokeKey, rotateKey, setBalanceAlert } from "../../common/management.ts"
import { usageReport } from "../../usageReport.ts"
import { html } from "../pages/html.ts"
import { type Form, withoutSession } from "../pages/respond.ts"
import { pageSession } from "../pages/session.ts"
import { DashboardAppsRoutes } from "./apps.ts"
import { dashboardGuard } from "./guard.ts"
import type { Frame } from "./layout.ts"
import {
  csvHeader,
  csvRow,
  dayPattern,
  decodeCursor,
  type ReceiptFilter,
  receiptPage,
  usageByDay
} from "./receipts.ts"
import {
  billingPage,
  confirmKeyPage,
  keysPage,
  type Notes,
  overviewPage,
  tokensPage,
  usagePage
} from "./views.ts"

/** What a dashboard handler may use: the services it is given and the request. */
type Needs = Keys | Ledger | Usage | Checkout | PaymentRails | HttpServerRequest.HttpServerRequest

const receiptsPerPage = 25
const maxScanned = 5_000
const maxCsvRows = 10_000

/** Where a form may end besides the service: a payment provider's checkout or portal. */
const paymentOrigins = (rails: ReadonlyArray<string>) =>
  rails.includes("stripe") ? ["https://checkout.stripe.com", "https://billing.stripe.com"] : []

/**
 * `/dashboard`: a signed-in person's account, server-rendered. The `/login` cookie signs in; every
 * form carries the session's CSRF token and the account it acts on, which must be one the sign-in
 * governs. Each page calls the services the management API calls, never the API itself.
 */
export const DashboardRoutes = <R>(operations: ReadonlyArray<AnyOperation<R>>) =>
  Layer.merge(DashboardPageRoutes(operations), DashboardAppsRoutes)

const DashboardPageRoutes = <R>(operations: ReadonlyArray<AnyOperation<R>>) =>
  HttpRouter.use((router) =>
    Effect.gen(function* () {
      const { config, identities, clientIp } = yield* pageSession
      const services = yield* Effect.context<Keys | Ledger | Usage | Checkout | PaymentRails>()
      const usage = yield* Usage
      const checkout = yield* Checkout
      const platformByOperation = new Map(operations.map((operation) => [operation.id, operation.platform]))
      const platformOf = (operation: string) => platformByOperation.get(operation) ?? "other"
      const operationIds = operations.map((operation) => operation.id).sort()
      const chartPlatforms = [...platforms, "other", "unsplit"]
      const formTargets = paymentOrigins(config.checkoutRails)

      const guard = yield* dashboardGuard(formTargets)
      const { respond } = guard
      const signedInPage = (
        handle: (
          frame: Frame,
          governor: Governor,
          query: URLSearchParams
        ) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, Needs>
      ) => guard.signedInPage(handle).pipe(Effect.provideContext(services))
      const signedInForm = (
        handle: (
          frame: Frame,
          governor: Governor,
          form: Form
        ) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, Needs>
      ) => guard.signedInForm(handle).pipe(Effect.provideContext(services))

      const reportFor = (governor: Governor, account: Account) =>
        Effect.gen(function* () {
          const ip = yield* clientIp
          const facts = yield* usage.facts(account.id, ip)
          const now = yield* Clock.currentTimeMillis
          const key = { id: governor.tokenId, accountId: account.id, hint: governor.hint, revoked: false }
          return usageReport({ account, key, ip }, facts, now, config)
        })

      // Overview
      yield* router.add(
        "GET",
        "/dashboard",
        signedInPage((frame, governor) =>
          Effect.map(reportFor(governor, frame.account), (report) => respond(overviewPage(frame, report)))
        )
      )

      // Usage: chart and receipts
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
        signedInPage((frame, governor, query) =>
          Effect.gen(function* () {
            const report = yield* reportFor(governor, frame.account)
            const now = yield* Clock.currentTimeMillis
            const days = yield* usageByDay(frame.account.id, now, report.history, platformOf, maxScanned)
            const filter = filterOf(query)
            const before = decodeCursor(query.get("before") ?? "")
            const page = yield* receiptPage(frame.account.id, filter, {
              limit: receiptsPerPage,
              before,
              maxScanned
            })
            return respond(
              usagePage(
                frame,
                days,
                chartPlatforms,
                operationIds,
                { ...page, operation: filter.operation, day: filter.day, paged: before !== undefined },
                filter.error
              )
            )
          })
        )
      )

      yield* router.add(
        "GET",
        "/dashboard/receipts.csv",
        signedInPage((frame, _governor, query) =>
          Effect.gen(function* () {
            const filter = filterOf(query)
            const page = yield* receiptPage(frame.account.id, filter, {
              limit: maxCsvRows,
              before: undefined,
              maxScanned: maxCsvRows * 2
            })
            const body = [
              csvHeader.join(","),
              ...page.receipts.map((r) => csvRow(r, platformOf(r.operation)))
            ]
            return HttpServerResponse.text(`${body.join("\r\n")}\r\n`, {
              contentType: "text/csv; charset=utf-8",
              headers: {
                "content-disposition": `attachment; filename="receipts-${frame.account.id}.csv"`,
                "cache-control": "no-store",
                "x-content-type-options": "nosniff"
              }
            })
          })
        )
      )

      // Keys
      const keysOf = (account: Account) => Effect.flatMap(Keys, (keys) => keys.list(account.id))
      const showKeys = (frame: Frame, options: Parameters<typeof keysPage>[2] = {}, status = 200) =>
        Effect.map(keysOf(frame.account), (keys) => respond(keysPage(frame, keys, options), status))

      yield* router.add(
        "GET",
        "/dashboard/keys",
        signedInPage((frame) => showKeys(frame))
      )

      yield* router.add(
        "POST",
        "/dashboard/keys",
        signedInForm((frame, governor, form) =>
          Effect.gen(function* () {
            const label = form.get("label").slice(0, 100)
            const issued = yield* createKey(governor, {
              account_id: frame.account.id,
              label: label === "" ? undefined : label
            })
            return yield* showKeys(frame, { issued, grant: issued.grant_credits }, 201)
          })
        )
      )

      const keyAction = (action: "rotate" | "revoke") =>
        signedInForm((frame, governor, form) =>
          Effect.gen(function* () {
            const keyId = form.get("key_id")
            const key = (yield* keysOf(frame.account)).find((listed) => listed.key_id === keyId)
            if (key === undefined || key.revoked_at !== null)
              return yield* showKeys(
                frame,
                {
                  error:
                    key === undefined
                      ? "That key is not one of this account's keys. Choose a key from the list."
                      : "That key is already revoked; create a new one below."
                },
                404
              )
            if (form.get("confirm") !== "yes") return respond(confirmKeyPage(frame, action, key))
            const args = { account_id: frame.account.id, key_id: key.key_id }
            if (action === "revoke")
              return yield* revokeKey(governor, args).pipe(
                Effect.flatMap(() =>
                  showKeys(frame, {
                    ok: `Key ${key.hint} is revoked: it no longer works. Programs that used it need another key.`
                  })
                )
              )
            const rotated = yield* rotateKey(governor, args)
            return yield* showKeys(frame, { issued: rotated, replaces: key.hint })
          })
        )
      yield* router.add("POST", "/dashboard/keys/rotate", keyAction("rotate"))
      yield* router.add("POST", "/dashboard/keys/revoke", keyAction("revoke"))

      // Billing: alert, packs, portal
      const showBilling = (frame: Frame, governor: Governor, notes: Notes = {}, status = 200) =>
        Effect.map(reportFor(governor, frame.account), (report) =>
          respond(billingPage(config, frame, report, notes), status)
        )

      yield* router.add(
        "GET",
        "/dashboard/billing",
        signedInPage((frame, governor) => showBilling(frame, governor))
      )

      yield* router.add(
        "POST",
        "/dashboard/alert",
        signedInForm((frame, governor, form) =>
          Effect.gen(function* () {
            const text = form.get("threshold")
            const threshold = /^\d{1,12}$/.test(text) ? Number(text) : Number.NaN
            if (!Number.isSafeInteger(threshold))
              return yield* showBilling(
                frame,
                governor,
                { error: "The threshold is a whole number of credits, 0 or more (0 turns the alert off)." },
                400
              )
            const set = yield* setBalanceAlert(governor, { account_id: frame.account.id, threshold })
            return yield* showBilling(frame, governor, {
              ok:
                set.threshold === 0
                  ? "The balance alert is off."
                  : `Alert set: we email ${governor.email} when the spendable credits fall below ${set.threshold}.`
            })
          })
        )
      )

      yield* router.add(
        "POST",
        "/dashboard/packs",
        signedInForm((frame, governor, form) =>
          Effect.gen(function* () {
            const started = yield* checkout
              .start({
                pack: form.get("pack"),
                rail: form.get("rail") || undefined,
                accountId: frame.account.id
              })
              .pipe(Effect.result)
            if (started._tag === "Success")
              return HttpServerResponse.redirect(started.success.checkout_url, {
                status: 303,
                headers: { "cache-control": "no-store" }
              })
            const error = started.failure
            return yield* showBilling(
              frame,
              governor,
              {
                error:
                  error._tag === "InvalidInput"
                    ? `${error.message} Choose one of the packs below.`
                    : `${error.message} Nothing was charged; try again in a minute.`
              },
              error._tag === "InvalidInput" ? 400 : 503
            )
          })
        )
      )

      yield* router.add(
        "POST",
        "/dashboard/portal",
        signedInForm((frame, governor) =>
          billingPortal(governor, { account_id: frame.account.id }).pipe(
            Effect.map((portal) =>
              HttpServerResponse.redirect(portal.url, {
                status: 303,
                headers: { "cache-control": "no-store" }
              })
            ),
            Effect.catchTag("UpstreamUnavailable", (error) =>
              showBilling(frame, governor, { error: error.message }, 503)
            )
          )
        )
      )

      // Management tokens
      const showTokens = (frame: Frame, governor: Governor, notes: Notes = {}, status = 200) =>
        Effect.map(identities.tokens(governor), (tokens) => respond(tokensPage(frame, tokens, notes), status))

      yield* router.add(
        "GET",
        "/dashboard/tokens",
        signedInPage((frame, governor) => showTokens(frame, governor))
      )

      yield* router.add(
        "POST",
        "/dashboard/tokens/revoke",
        signedInForm((frame, governor, form) =>
          Effect.gen(function* () {
            const tokenId = form.get("token_id")
            const revoked = yield* identities.revokeToken(governor, tokenId).pipe(Effect.option)
            if (revoked._tag === "None")
              return yield* showTokens(
                frame,
                governor,
                {
                  error:
                    "That sign-in is not one of yours, or it is already revoked. Choose one from the list."
                },
                404
              )
            if (tokenId === governor.tokenId)
              return withoutSession(
                respond(
                  guard.barePage(
                    "Signed out",
                    html`<p>This browser's sign-in is revoked. <a href="${config.baseUrl}/login">Sign in again</a>.</p>`
                  )
                ),
                config.baseUrl
              )
            return yield* showTokens(frame, governor, {
              ok: "That sign-in is revoked; it stopped working at once."
            })
          })
        )
      )
    })
  )
