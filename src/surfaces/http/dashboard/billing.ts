import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { AppConfig, type AppConfigShape } from "../../../config.ts"
import type { Usage } from "../../../contract/schemas.ts"
import type { Governor } from "../../../domain/accounts.ts"
import type { Pack } from "../../../domain/plans.ts"
import { Billing, type Purchase } from "../../../payments/Billing.ts"
import { Checkout } from "../../../payments/Checkout.ts"
import type { PaymentRails } from "../../../payments/PaymentRail.ts"
import { Topups, type TopupView } from "../../../payments/Topups.ts"
import type { Keys } from "../../../services/Keys.ts"
import { billingPortal, setBalanceAlert, setTopup } from "../../common/management.ts"
import { count, dollars, railLabel } from "../checkout/format.ts"
import { purchasesTable } from "../checkout/portal.ts"
import { html } from "../pages/html.ts"
import { dashboardGuard } from "./guard.ts"
import {
  accountQuery,
  dashboardPage,
  dateOf,
  type Frame,
  formFields,
  hidden,
  type Notes,
  notes
} from "./layout.ts"
import { usageReporter } from "./report.ts"

type Config = Pick<AppConfigShape, "baseUrl" | "policy" | "checkoutRails">

/** The purchases the Billing page lists, newest first; the billing portal lists up to 100. */
const purchasesOnPage = 20

/** Where a form may end besides the service: a payment provider's checkout or portal. */
const paymentOrigins = (rails: ReadonlyArray<string>) =>
  rails.includes("stripe") ? ["https://checkout.stripe.com", "https://billing.stripe.com"] : []

/** A pack's name as a word (its id stays the form's value). */
const packName = (pack: Pack) => `${pack.pack.charAt(0).toUpperCase()}${pack.pack.slice(1)}`

/** The first pack's button is the page's one primary action; every other button is secondary. */
const packForm = (config: Config, frame: Frame, pack: Pack, index: number) =>
  html`<form method="post" action="${config.baseUrl}/dashboard/packs">${formFields(frame.csrf, frame.account)}${hidden("pack", pack.pack)}${
    config.checkoutRails.length < 2
      ? ""
      : html`<label for="rail-${pack.pack}">Pay with</label><select id="rail-${pack.pack}" name="rail">${config.checkoutRails.map(
          (rail) => html`<option value="${rail}">${railLabel(rail)}</option>`
        )}</select>`
  }<button type="submit"${index === 0 ? "" : html` class="secondary"`}>${
    pack.mode === "subscription"
      ? `Subscribe to ${packName(pack)}: ${dollars(pack.price_usd_cents)} a month for ${count(pack.credits_per_month ?? 0)} credits a month`
      : `Buy ${packName(pack)}: ${dollars(pack.price_usd_cents)} for ${count(pack.credits ?? 0)} credits`
  }</button></form>`

/** Automatic top-up: its state, this month's spend, the last top-up; the form that arms it and the one that stops it. */
const topupSection = (config: Config, frame: Frame, topup: TopupView) => {
  const pack = config.policy.packs.find((candidate) => candidate.mode === "one_time")
  const last = topup.last_topup
  return html`<section aria-labelledby="topup"><h2 id="topup">Automatic top-up</h2>
<p>${
    topup.enabled
      ? `On: when a call leaves fewer than ${count(topup.below_credits ?? 0)} spendable credits, we buy one ${topup.pack} pack (${dollars(topup.price_usd_cents ?? 0)} for ${count(topup.credits ?? 0)} credits), at most ${dollars(topup.monthly_max_usd_cents ?? 0)} a month.`
      : "Off."
  } This month (${topup.month}): ${dollars(topup.month_spent_usd_cents)} of top-ups.${
    topup.failures_in_a_row > 0 ? ` ${topup.failures_in_a_row} failed in a row (3 turn it off).` : ""
  }</p>${
    last === null
      ? ""
      : html`<p>Last top-up <code>${last.topup_id}</code>: ${last.state}${last.rail === null ? "" : ` on ${last.rail}`}, ${count(last.credits)} credits for ${dollars(last.price_usd_cents)}, ${dateOf(last.created_at)}${last.error === null ? "" : ` (${last.error})`}.</p>`
  }
<form method="post" action="${config.baseUrl}/dashboard/topup" class="row">${formFields(frame.csrf, frame.account)}${hidden("pack", pack?.pack ?? "flex")}
<div><label for="below-credits">Top up below (credits)</label><input id="below-credits" name="below_credits" type="number" min="1" step="1" inputmode="numeric" required value="${topup.below_credits ?? 1000}"></div>
<div><label for="monthly-max">At most a month (USD)</label><input id="monthly-max" name="monthly_max_usd" type="number" min="1" step="1" inputmode="numeric" required value="${Math.round((topup.monthly_max_usd_cents ?? (pack?.price_usd_cents ?? 2000) * 3) / 100)}"></div>
<button type="submit" class="secondary">${topup.enabled ? "Update automatic top-up" : "Turn on automatic top-up"}</button></form>${
    topup.enabled
      ? html`<form method="post" action="${config.baseUrl}/dashboard/topup/off">${formFields(frame.csrf, frame.account)}<button type="submit" class="secondary">Turn off automatic top-up</button></form>`
      : ""
  }</section>`
}

/** Billing: the balance alert, automatic top-up, the packs and the billing portal. */
export const billingPage = (
  config: Config,
  frame: Frame,
  usage: typeof Usage.Type,
  topup: TopupView,
  purchases: ReadonlyArray<Purchase>,
  options: Notes = {}
) =>
  dashboardPage(
    frame,
    "billing",
    "Billing",
    html`${notes(options)}
<p>Spendable credits: <strong>${count(usage.balance?.total ?? 0)}</strong> (grant ${count(usage.balance?.grant ?? 0)},
purchased ${count(usage.balance?.purchased ?? 0)}). Plan <code>${usage.plan}</code>.</p>
<section aria-labelledby="alert"><h2 id="alert">Balance alert</h2>
<p>We email you once each time the spendable credits fall below this number. 0 turns the alert off.
${frame.account.alertThreshold === 0 ? "The alert is off." : `The alert is set at ${count(frame.account.alertThreshold)} credits.`}</p>
<form method="post" action="${config.baseUrl}/dashboard/alert" class="row">${formFields(frame.csrf, frame.account)}
<div><label for="threshold">Threshold (credits)</label><input id="threshold" name="threshold" type="number" min="0" step="1" inputmode="numeric" value="${frame.account.alertThreshold}" required></div>
<button type="submit" class="secondary">Set alert</button></form></section>
${topupSection(config, frame, topup)}
<section aria-labelledby="packs"><h2 id="packs">Buy credits</h2>
${config.policy.packs.map((pack, index) => packForm(config, frame, pack, index))}
<p>The credits land on this account; its keys keep working. <a href="${config.baseUrl}/upgrade?${accountQuery(frame.account)}">Compare the packs</a>.</p></section>
<section aria-labelledby="purchases"><h2 id="purchases">Purchases</h2>
${purchasesTable(purchases)}${
  usage.purchases !== undefined && usage.purchases.count > purchases.length
    ? html`<p>The newest ${purchases.length} of ${count(usage.purchases.count)}; the billing portal lists more.</p>`
    : ""
}</section>
<section aria-labelledby="portal"><h2 id="portal">Billing portal</h2>
<p>Purchases, the subscription and its cancellation.${
      usage.purchases === undefined
        ? " This account has bought nothing yet."
        : ` ${usage.purchases.count} ${usage.purchases.count === 1 ? "purchase" : "purchases"} so far.`
    }</p>
<form method="post" action="${config.baseUrl}/dashboard/portal">${formFields(frame.csrf, frame.account)}<button type="submit" class="secondary">Open the billing portal</button></form></section>`
  )

/** Management tokens: every sign-in of this email, and its revocation. */

/** `/dashboard/billing`: the balance alert, a pack's checkout, the billing portal. */
export const BillingRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const checkout = yield* Checkout
    const services = yield* Effect.context<Keys | PaymentRails | Checkout | Topups>()
    const topups = yield* Topups
    const billing = yield* Billing
    const reportFor = yield* usageReporter
    const seeOther = (url: string) =>
      HttpServerResponse.redirect(url, { status: 303, headers: { "cache-control": "no-store" } })
    const config = yield* AppConfig
    // This page's forms may end at the payment provider's own pages.
    const guard = yield* dashboardGuard(paymentOrigins(config.checkoutRails))

    const showBilling = (frame: Frame, governor: Governor, options: Notes = {}, status = 200) =>
      Effect.gen(function* () {
        const report = yield* reportFor(governor, frame.account)
        const topup = yield* topups.show(frame.account.id)
        const { purchases } = yield* billing.history(frame.account.id, purchasesOnPage)
        return guard.respond(billingPage(config, frame, report, topup, purchases, options), status)
      })

    yield* router.add(
      "GET",
      "/dashboard/billing",
      guard.signedInPage((frame, governor) => showBilling(frame, governor))
    )

    yield* router.add(
      "POST",
      "/dashboard/alert",
      guard
        .signedInForm((frame, governor, form) =>
          Effect.gen(function* () {
            const text = form.get("threshold")
            if (!/^\d{1,12}$/.test(text))
              return yield* showBilling(
                frame,
                governor,
                { error: "The threshold is a whole number of credits, 0 or more (0 turns the alert off)." },
                400
              )
            const set = yield* setBalanceAlert(governor, {
              account_id: frame.account.id,
              threshold: Number(text)
            })
            const updated = { ...frame, account: { ...frame.account, alertThreshold: set.threshold } }
            return yield* showBilling(updated, governor, {
              ok:
                set.threshold === 0
                  ? "The balance alert is off."
                  : `Alert set: we email ${governor.email} when the spendable credits fall below ${set.threshold}.`
            })
          })
        )
        .pipe(Effect.provideContext(services))
    )

    yield* router.add(
      "POST",
      "/dashboard/topup",
      guard
        .signedInForm((frame, governor, form) =>
          Effect.gen(function* () {
            const below = form.get("below_credits")
            const max = form.get("monthly_max_usd")
            if (!/^\d{1,12}$/.test(below) || Number(below) < 1 || !/^\d{1,7}$/.test(max))
              return yield* showBilling(
                frame,
                governor,
                {
                  error:
                    "Give the line as a whole number of credits (1 or more) and the monthly maximum in whole dollars."
                },
                400
              )
            const set = yield* setTopup(governor, {
              account_id: frame.account.id,
              pack: form.get("pack") || undefined,
              below_credits: Number(below),
              monthly_max_usd_cents: Number(max) * 100
            }).pipe(Effect.result)
            if (set._tag === "Failure")
              return yield* showBilling(
                frame,
                governor,
                { error: set.failure.message },
                set.failure._tag === "InvalidInput" ? 400 : 403
              )
            return yield* showBilling(frame, governor, {
              ok: `Automatic top-up is on: below ${count(set.success.below_credits ?? 0)} credits, at most ${dollars(set.success.monthly_max_usd_cents ?? 0)} a month.`
            })
          })
        )
        .pipe(Effect.provideContext(services))
    )

    yield* router.add(
      "POST",
      "/dashboard/topup/off",
      guard
        .signedInForm((frame, governor) =>
          Effect.gen(function* () {
            const off = yield* setTopup(governor, { account_id: frame.account.id, enabled: false }).pipe(
              Effect.result
            )
            return yield* showBilling(
              frame,
              governor,
              off._tag === "Success" ? { ok: "Automatic top-up is off." } : { error: off.failure.message },
              off._tag === "Success" ? 200 : 403
            )
          })
        )
        .pipe(Effect.provideContext(services))
    )

    yield* router.add(
      "POST",
      "/dashboard/packs",
      guard.signedInForm((frame, governor, form) =>
        Effect.gen(function* () {
          const started = yield* checkout
            .start({
              pack: form.get("pack"),
              rail: form.get("rail") || undefined,
              // The dashboard's sign-in is a management token.
              starter: { origin: "management", accountId: frame.account.id }
            })
            .pipe(Effect.catchTag("SqlError", Effect.die), Effect.result)
          if (started._tag === "Success") return seeOther(started.success.checkout_url)
          const error = started.failure
          switch (error._tag) {
            case "InvalidInput":
              return yield* showBilling(
                frame,
                governor,
                { error: `${error.message} Choose one of the packs below.` },
                400
              )
            case "RateLimited":
              return HttpServerResponse.setHeader(
                yield* showBilling(frame, governor, { error: error.message }, 429),
                "retry-after",
                String(error.retry_after_seconds)
              )
            case "UpstreamUnavailable":
              return yield* showBilling(
                frame,
                governor,
                { error: `${error.message} Nothing was charged; try again in a minute.` },
                503
              )
          }
        })
      )
    )

    yield* router.add(
      "POST",
      "/dashboard/portal",
      guard
        .signedInForm((frame, governor) =>
          billingPortal(governor, { account_id: frame.account.id }).pipe(
            Effect.map((portal) => seeOther(portal.url)),
            Effect.catchTag("UpstreamUnavailable", (error) =>
              showBilling(frame, governor, { error: error.message }, 503)
            )
          )
        )
        .pipe(Effect.provideContext(services))
    )
  })
)
