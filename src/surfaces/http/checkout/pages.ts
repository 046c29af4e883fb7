import { type AppConfigShape, links } from "../../../config.ts"
import {
  type AfterPayment,
  type CheckoutOrigin,
  type CheckoutView,
  keyReaderOf
} from "../../../payments/Checkout.ts"
import { html, page } from "../pages/html.ts"
import { dollars, packSummary, when } from "./format.ts"

type Config = Pick<AppConfigShape, "baseUrl">

const backToPacks = (config: Config) =>
  html`<p>Start again from <a href="${links(config.baseUrl).upgrade}">the credit packs</a>.</p>`

/** A checkout address that leads nowhere: unknown, mistyped, or past its 24 hours. */
export const checkoutNotFoundPage = (config: Config) =>
  page(
    config.baseUrl,
    "Checkout not found",
    html`<p class="error" role="alert">No open checkout has this address: it is unknown or expired (a checkout is open for 24 hours). Nothing was charged.</p>
${backToPacks(config)}`
  )

/** `POST /upgrade` for an `account` this service does not have. */
export const unknownAccountPage = (config: Config, account: string) =>
  page(
    config.baseUrl,
    "Unknown account",
    html`<p class="error" role="alert">There is no account <code>${account}</code> here, so no checkout was started.
Open the <code>upgrade_url</code> of the error you got as it is, or check the account on <a href="${config.baseUrl}/dashboard">your dashboard</a>.</p>
<p>To buy credits for a new account instead, use <a href="${links(config.baseUrl).upgrade}">the credit packs without an account</a>.</p>`
  )

/** The rail could not start the checkout (Stripe did not answer): nothing was charged. */
export const railFailedPage = (config: Config, message: string) =>
  page(
    config.baseUrl,
    "Checkout not started",
    html`<p class="error" role="alert">${message}</p>${backToPacks(config)}`
  )

const resume = html`Retry as the error's <code>offer.resume</code> says: <code>INSUFFICIENT_CREDITS</code> with the same
<code>Idempotency-Key</code>, <code>TRIAL_CAP_EXCEEDED</code> and <code>BUDGET_EXHAUSTED</code> with a fresh one.`

/** What the credits of an existing account mean for its keys, said as it happened. */
const credited = (origin: CheckoutOrigin | null, accountId: string) => {
  const everyKey = html`every key of account <code>${accountId}</code> keeps working: nothing to reconfigure.`
  switch (origin) {
    case "spend_key":
      return html`<p>The key that started this checkout keeps working: nothing to reconfigure. ${resume}</p>`
    case "management":
      return html`<p>No key started this checkout: it was started with a management token (an email sign-in) for the
account, and ${everyKey} ${resume}</p>`
    case "page":
      return html`<p>No key started this checkout: it named the account on the upgrade page, and ${everyKey} ${resume}</p>`
    default:
      return html`<p>The credits landed on the account, and ${everyKey} ${resume}</p>`
  }
}

const afterPayment = (config: Config, view: CheckoutView, after: AfterPayment) => {
  const checkoutRead = html`<code>GET /v1/checkout/{session_id}</code>`
  switch (after._tag) {
    case "Credited":
      return credited(after.origin, view.accountId ?? "")
    case "NewKey":
      return html`<h2>Your new key</h2><p><strong>Shown once: store it now.</strong> This page will not show it again.</p>
<pre id="api-key" class="secret">${after.key}</pre>
<p>Send it as <code>Authorization: Bearer &lt;key&gt;</code>. To make the account recoverable by email, claim it at <a href="${links(config.baseUrl).claim}">${links(config.baseUrl).claim}</a>.</p>`
    case "KeyShown":
      return after.reader === "page"
        ? html`<p>This checkout's new key was shown once, on the first view of this page after payment, and is never shown
again: the service keeps only its hash.</p>`
        : html`<p>This checkout's new key was shown once, on the first view of this page after payment (or in the first
${checkoutRead}), and is never shown again: the service keeps only its hash.</p>`
    case "KeyToProgram":
      return html`<h2>Your new key</h2><p>This checkout was started by a program through the API (<code>POST /v1/checkout</code>),
so the new account's key went to the program that started this checkout: it receives it once, in its first
${checkoutRead} after payment. This page never shows it. Ask that program (or the person running it) for the key.</p>`
  }
}

/** Where a keyless checkout's new key will go, told before paying. */
const keyDestination = (view: CheckoutView) =>
  keyReaderOf(view.origin) === "api"
    ? html`, and the new account's key goes to the program that started this checkout (its
<code>GET /v1/checkout/{session_id}</code> after payment), not to this page`
    : ", and the next page shows the new account's key once"

/**
 * `/checkout/{session_id}`: the local rail's test-mode pay button, Stripe's wait for its webhook, and
 * after payment what was credited (with a keyless checkout's key, once).
 */
export const checkoutPage = (
  config: Config,
  token: string,
  view: CheckoutView,
  after: AfterPayment | undefined
) => {
  const self = `${config.baseUrl}/checkout/${token}`
  if (view.status === "paid")
    return page(
      config.baseUrl,
      "Payment received",
      html`<p>Paid: ${packSummary(view.pack)}. The credits are on account <code>${view.accountId ?? ""}</code>
and the plan is <code>${view.pack.pack}</code> from now on.</p>
${after === undefined ? "" : afterPayment(config, view, after)}`,
      { testMode: view.rail === "local" }
    )
  if (view.rail !== "local")
    return page(
      config.baseUrl,
      "Waiting for the payment confirmation",
      html`<p>${packSummary(view.pack)}.</p>
<p role="status">The payment provider has not confirmed this payment yet. Credits land only when it does, usually a few
seconds after paying. <a href="${self}">Check again</a>.</p>
<p>Left the payment page without paying? The checkout stays open until ${when(view.expiresAt)};
or start again from <a href="${links(config.baseUrl).upgrade}">the credit packs</a>.</p>`
    )
  return page(
    config.baseUrl,
    "Checkout (test mode)",
    html`<p>${packSummary(view.pack)}.</p>
<p>This is the built-in test-mode rail: no card is asked for and no money moves. ${
      view.accountId === null
        ? html`Paying makes a new account at once${keyDestination(view)}.`
        : html`Paying adds the credits to account <code>${view.accountId}</code> at once.`
    }</p>
<form method="post" action="${self}/pay"><button type="submit">Pay ${dollars(view.pack.price_usd_cents)} (test mode)</button></form>
<p>The checkout stays open until ${when(view.expiresAt)}.</p>`,
    { testMode: true, description: "A test-mode checkout: no card, no money moves." }
  )
}

/** `POST /upgrade` past the per-IP limit on checkouts started without a key: nothing was started. */
export const tooManyCheckoutsPage = (config: Config, message: string) =>
  page(
    config.baseUrl,
    "Too many checkouts",
    html`<p class="error" role="alert">${message}</p>
<p>A checkout you already opened can still be paid until it expires, 24 hours after it started.</p>
${backToPacks(config)}`
  )

/** A form the pages refuse before reading it (too large, not a form, sent from another site). */
export const refusedFormPage = (config: Config, message: string) =>
  page(
    config.baseUrl,
    "Form refused",
    html`<p class="error" role="alert">${message}</p>${backToPacks(config)}`
  )
