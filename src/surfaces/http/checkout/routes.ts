import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { AppConfig, links } from "../../../config.ts"
import type { Pack } from "../../../domain/plans.ts"
import { Checkout, type CheckoutView } from "../../../payments/Checkout.ts"
import { html, page } from "../pages/html.ts"

/** The local rail's pages post only to the service itself. */
const headers = {
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store"
}
const htmlPage = (body: string, status = 200) =>
  HttpServerResponse.text(body, { contentType: "text/html; charset=utf-8", headers, status })

const dollars = (cents: number) => `$${(cents / 100).toFixed(2)}`
const count = (n: number) => n.toLocaleString("en-US")

export const packSummary = (pack: Pack) =>
  pack.mode === "subscription"
    ? `${pack.pack}: ${dollars(pack.price_usd_cents)} a month for ${count(pack.credits_per_month ?? 0)} credits a month`
    : `${pack.pack}: ${dollars(pack.price_usd_cents)} once for ${count(pack.credits ?? 0)} credits`

/**
 * The local rail's test-mode checkout: `/checkout/{session_id}` shows the pack and a pay button
 * (no card, no money: a test rail); paying posts to `/checkout/{session_id}/pay` and comes back to
 * the same page, which then says it is paid and, for a keyless checkout, shows the new key once.
 */
export const CheckoutPageRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const checkout = yield* Checkout
    const link = links(config.baseUrl)

    const notFound = htmlPage(
      page(
        config.baseUrl,
        "Checkout not found",
        html`<p>No open checkout has this address: it is unknown or expired (a checkout is open for 24 hours).</p>
<p>Start again from <a href="${link.upgrade}">the credit packs</a>.</p>`
      ),
      404
    )

    const sessionPage = (token: string, view: CheckoutView, apiKey: string | undefined) =>
      page(
        config.baseUrl,
        view.status === "paid" ? "Payment received" : "Checkout (test mode)",
        view.status === "paid"
          ? html`<p>Paid: ${packSummary(view.pack)}. The credits are on account <code>${view.accountId ?? ""}</code>
and the plan is <code>${view.pack.pack}</code> from now on.</p>
${
  apiKey === undefined
    ? view.accountId === null
      ? ""
      : html`<p>Your existing key keeps working: nothing to reconfigure. Retry as the error's <code>offer.resume</code> says.</p>`
    : html`<h2>Your new key</h2><p><strong>Shown once: store it now.</strong></p><pre id="api-key">${apiKey}</pre>
<p>Send it as <code>Authorization: Bearer &lt;key&gt;</code>. To make the account recoverable by email, claim it at <a href="${link.claim}">${link.claim}</a>.</p>`
}`
          : html`<p>${packSummary(view.pack)}.</p>
<p>This is the built-in test-mode rail: no card is asked for and no money moves. Paying credits the account at once.</p>
<form method="post" action="${config.baseUrl}/checkout/${token}/pay"><button type="submit">Pay ${dollars(view.pack.price_usd_cents)}</button></form>
<p>The checkout stays open until ${new Date(view.expiresAt).toISOString()}.</p>`
      )

    yield* router.add(
      "GET",
      "/checkout/:session",
      Effect.gen(function* () {
        const { params } = yield* HttpRouter.RouteContext
        const token = params.session ?? ""
        const view = yield* Effect.orDie(Effect.option(checkout.view(token)).pipe(Effect.map((o) => o)))
        if (view._tag === "None" || view.value.status === "expired") return notFound
        // The page after payment is one of the two places a keyless checkout's key is shown once.
        const status = view.value.status === "paid" ? yield* Effect.orDie(checkout.status(token)) : undefined
        return htmlPage(sessionPage(token, view.value, status?.api_key))
      })
    )
    yield* router.add(
      "POST",
      "/checkout/:session/pay",
      Effect.gen(function* () {
        const { params } = yield* HttpRouter.RouteContext
        const token = params.session ?? ""
        const paid = yield* Effect.option(Effect.catchTag(checkout.payLocal(token), "SqlError", Effect.die))
        if (paid._tag === "None") return notFound
        return HttpServerResponse.redirect(`${config.baseUrl}/checkout/${token}`, { status: 303, headers })
      })
    )
  })
)
