import { Effect, Schema } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../../config.ts"
import { Checkout, type CheckoutView } from "../../../payments/Checkout.ts"
import * as Row from "../../../store/rows.ts"
import { type Form, type FormRefusal, htmlPage, queryParams, readForm } from "../pages/respond.ts"
import { upgradePage } from "../pages/upgrade.ts"
import {
  checkoutNotFoundPage,
  checkoutPage,
  type Reveal,
  railFailedPage,
  refusedFormPage,
  unknownAccountPage
} from "./pages.ts"
import { portalExpiredPage, portalPage, readPortal } from "./portal.ts"

const decodeAccountIds = Row.decoder(Schema.Struct({ id: Schema.String }), "upgrade account")
const decodeKeyless = Row.decoder(Schema.Struct({ keyless: Schema.Boolean }), "checkout keyless")

/** Every page here is about one account's money: never stored by a cache. */
const personal = { private: true } as const

/**
 * The money pages: `POST /upgrade` (a pack form of `/upgrade` starts a checkout), the local rail's
 * test-mode checkout `/checkout/{session_id}` and its pay button, and the local billing portal
 * `/portal?session=...` with its cancel form. Stripe's own pages take over where it is the rail.
 */
export const CheckoutPageRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const checkout = yield* Checkout
    const sql = yield* SqlClient.SqlClient

    const refusals: Record<FormRefusal, { readonly message: string; readonly status: number }> = {
      "too-large": { message: `The form is larger than ${config.maxBodyBytes} bytes.`, status: 413 },
      "not-a-form": {
        message: "This address takes an HTML form (application/x-www-form-urlencoded).",
        status: 415
      },
      "cross-site": {
        message: "This form was sent from another site. Open the page on this service and submit it there.",
        status: 403
      }
    }

    const withForm = <R>(
      handle: (form: Form) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
    ) =>
      Effect.flatMap(readForm(config), (form) =>
        typeof form === "string"
          ? Effect.succeed(
              htmlPage(refusedFormPage(config, refusals[form].message), { status: refusals[form].status })
            )
          : handle(form)
      )

    const accountExists = (id: string) =>
      sql`SELECT id FROM accounts WHERE id = ${id}`.pipe(
        Effect.flatMap(decodeAccountIds),
        Effect.map((rows) => rows.length > 0)
      )

    yield* router.add(
      "POST",
      "/upgrade",
      withForm((form) =>
        Effect.gen(function* () {
          const account = form.get("account").slice(0, 100) || undefined
          if (account !== undefined && !(yield* accountExists(account)))
            return htmlPage(unknownAccountPage(config, account), { status: 404 })
          const started = yield* checkout
            .start({ pack: form.get("pack"), rail: form.get("rail") || undefined, accountId: account })
            .pipe(Effect.catchTag("SqlError", Effect.die), Effect.result)
          if (started._tag === "Success")
            return HttpServerResponse.redirect(started.success.checkout_url, {
              status: 303,
              headers: { "cache-control": "no-store" }
            })
          const error = started.failure
          return error._tag === "InvalidInput"
            ? htmlPage(upgradePage(config, account, error.message), { status: 400 })
            : htmlPage(railFailedPage(config, error.message), {
                status: 503,
                headers: { "retry-after": String(error.retry_after_seconds) }
              })
        }).pipe(Effect.orDie)
      )
    )

    const keyed: Reveal = { _tag: "Keyed" }
    const keyShown: Reveal = { _tag: "KeyShown" }

    /** How a paid checkout's page reaches the payer: a keyless checkout's key is made and shown by the first read. */
    const revealOf = (token: string, view: CheckoutView) =>
      Effect.gen(function* () {
        if (view.status !== "paid") return keyed
        const status = yield* checkout.status(token)
        if (status.api_key !== undefined) return { _tag: "NewKey" as const, key: status.api_key }
        const [row] = yield* sql`SELECT keyless FROM checkout_sessions WHERE id = ${view.id}`.pipe(
          Effect.flatMap(decodeKeyless)
        )
        return row?.keyless === true ? keyShown : keyed
      })

    yield* router.add(
      "GET",
      "/checkout/:session",
      Effect.gen(function* () {
        const { params } = yield* HttpRouter.RouteContext
        const token = params.session ?? ""
        const view = yield* Effect.option(Effect.catchTag(checkout.view(token), "SqlError", Effect.die))
        if (view._tag === "None" || view.value.status === "expired")
          return htmlPage(checkoutNotFoundPage(config), { status: 404, ...personal })
        const reveal = yield* revealOf(token, view.value).pipe(Effect.orDie)
        return htmlPage(checkoutPage(config, token, view.value, reveal), personal)
      })
    )

    yield* router.add(
      "POST",
      "/checkout/:session/pay",
      withForm(() =>
        Effect.gen(function* () {
          const { params } = yield* HttpRouter.RouteContext
          const token = params.session ?? ""
          const paid = yield* Effect.option(Effect.catchTag(checkout.payLocal(token), "SqlError", Effect.die))
          if (paid._tag === "None")
            return htmlPage(checkoutNotFoundPage(config), { status: 404, ...personal })
          return HttpServerResponse.redirect(`${config.baseUrl}/checkout/${token}`, {
            status: 303,
            headers: { "cache-control": "no-store" }
          })
        })
      )
    )

    const portalOf = (token: string) =>
      Effect.gen(function* () {
        const accountId = token === "" ? undefined : yield* checkout.portalAccount(token)
        return accountId === undefined ? undefined : yield* readPortal(accountId)
      }).pipe(Effect.orDie)

    const portalExpired = htmlPage(portalExpiredPage(config), { status: 404, ...personal })

    yield* router.add(
      "GET",
      "/portal",
      Effect.gen(function* () {
        const token = (yield* queryParams).get("session") ?? ""
        const view = yield* portalOf(token)
        return view === undefined ? portalExpired : htmlPage(portalPage(config, token, view), personal)
      })
    )

    yield* router.add(
      "POST",
      "/portal/cancel",
      withForm((form) =>
        Effect.gen(function* () {
          const token = form.get("session")
          const accountId = token === "" ? undefined : yield* checkout.portalAccount(token)
          if (accountId === undefined) return portalExpired
          yield* checkout.cancelAtPeriodEnd(accountId)
          return HttpServerResponse.redirect(
            `${config.baseUrl}/portal?session=${encodeURIComponent(token)}`,
            {
              status: 303,
              headers: { "cache-control": "no-store" }
            }
          )
        }).pipe(Effect.orDie)
      )
    )
  })
)
