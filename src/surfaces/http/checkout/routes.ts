import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { AppConfig } from "../../../config.ts"
import { Bearers } from "../../../identity/Bearers.ts"
import { Checkout } from "../../../payments/Checkout.ts"
import { Accounts } from "../../../services/Accounts.ts"
import { type Form, type FormRefusal, htmlPage, queryParams, readForm } from "../pages/respond.ts"
import { upgradePage } from "../pages/upgrade.ts"
import {
  checkoutNotFoundPage,
  checkoutPage,
  railFailedPage,
  refusedFormPage,
  tooManyCheckoutsPage,
  unknownAccountPage
} from "./pages.ts"
import { portalExpiredPage, portalPage, readPortal } from "./portal.ts"

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
    const bearers = yield* Bearers
    const accounts = yield* Accounts

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

    const accountExists = (id: string) => Effect.map(accounts.get(id), (account) => account !== undefined)

    yield* router.add(
      "POST",
      "/upgrade",
      withForm((form) =>
        Effect.gen(function* () {
          const account = form.get("account").slice(0, 100) || undefined
          if (account !== undefined && !(yield* accountExists(account)))
            return htmlPage(unknownAccountPage(config, account), { status: 404 })
          const clientIp = bearers.clientIp(yield* HttpServerRequest.HttpServerRequest)
          const started = yield* checkout
            .start({
              pack: form.get("pack"),
              rail: form.get("rail") || undefined,
              starter: { origin: "page", clientIp, accountId: account }
            })
            .pipe(Effect.catchTag("SqlError", Effect.die), Effect.result)
          if (started._tag === "Success")
            return HttpServerResponse.redirect(started.success.checkout_url, {
              status: 303,
              headers: { "cache-control": "no-store" }
            })
          const error = started.failure
          switch (error._tag) {
            case "InvalidInput":
              return htmlPage(upgradePage(config, account, error.message), { status: 400 })
            case "RateLimited":
              return htmlPage(tooManyCheckoutsPage(config, error.message), {
                status: 429,
                private: true,
                headers: { "retry-after": String(error.retry_after_seconds) }
              })
            case "UpstreamUnavailable":
              return htmlPage(railFailedPage(config, error.message), {
                status: 503,
                headers: { "retry-after": String(error.retry_after_seconds) }
              })
          }
        }).pipe(Effect.orDie)
      )
    )

    yield* router.add(
      "GET",
      "/checkout/:session",
      Effect.gen(function* () {
        const { params } = yield* HttpRouter.RouteContext
        const token = params.session ?? ""
        const view = yield* Effect.option(Effect.catchTag(checkout.view(token), "SqlError", Effect.die))
        if (view._tag === "None" || view.value.status === "expired")
          return htmlPage(checkoutNotFoundPage(config), { status: 404, ...personal })
        const after =
          view.value.status === "paid" ? yield* Effect.orDie(checkout.afterPayment(token)) : undefined
        return htmlPage(checkoutPage(config, token, view.value, after), personal)
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
