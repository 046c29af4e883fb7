import { Effect } from "effect"
import type { AppConfigShape } from "../../../config.ts"
import type { Account } from "../../../domain/accounts.ts"
import { Billing, type BillingHistory, type Purchase } from "../../../payments/Billing.ts"
import { Accounts } from "../../../services/Accounts.ts"
import { html, page } from "../pages/html.ts"
import { count, dollars, railLabel, when } from "./format.ts"

/** The purchases listed: the newest ones, enough for any person reading the page. */
const purchasesShown = 100

export interface PortalView {
  readonly accountId: string
  readonly account: Account
  readonly history: BillingHistory
}

/** What the local billing portal shows of an account: its plan and credits, its subscription, its purchases. */
export const readPortal = (accountId: string) =>
  Effect.gen(function* () {
    const account = yield* (yield* Accounts).get(accountId)
    if (account === undefined) return undefined
    return {
      accountId,
      account,
      history: yield* (yield* Billing).history(accountId, purchasesShown)
    } satisfies PortalView
  })

const subscriptionPart = (config: Pick<AppConfigShape, "baseUrl">, token: string, view: PortalView) => {
  const subscription = view.history.subscription
  if (subscription === undefined) return html`<p>No subscription.</p>`
  const active = subscription.status === "active"
  const state = !active
    ? `ended (${when(subscription.current_period_end)})`
    : subscription.cancel_at_period_end
      ? `active until ${when(subscription.current_period_end)}, then it ends: it will not renew`
      : `active, renews ${when(subscription.current_period_end)}`
  return html`<dl><dt>Pack</dt><dd><code>${subscription.pack}</code></dd><dt>Paid with</dt><dd>${railLabel(subscription.rail)}</dd>
<dt>Status</dt><dd id="subscription-status">${state}</dd>
<dt>Current period ends</dt><dd>${when(subscription.current_period_end)}</dd>
<dt>Cancel at period end</dt><dd>${subscription.cancel_at_period_end ? "yes" : "no"}</dd></dl>${
    active && !subscription.cancel_at_period_end
      ? html`<form method="post" action="${config.baseUrl}/portal/cancel"><input type="hidden" name="session" value="${token}">
<p>Cancelling keeps the plan and the credits of the paid period; no further month is charged or credited.</p>
<button type="submit">Cancel at period end</button></form>`
      : ""
  }`
}

const purchaseRow = (purchase: Purchase) =>
  html`<tr><td>${when(purchase.created_at)}</td><td><code>${purchase.pack}</code></td><td>${count(purchase.credits)}</td><td>${
    purchase.currency === "usd"
      ? dollars(purchase.price_usd_cents)
      : `${purchase.price_usd_cents} ${purchase.currency}`
  }</td><td><span>${purchase.rail}${
    // One span: on a phone the cell is a row of its label and its content.
    purchase.transaction_hash === null
      ? ""
      : html`<br><small>${purchase.network ?? ""} · from <code>${purchase.payer ?? ""}</code> · transaction <code>${purchase.transaction_hash}</code></small>`
  }</span></td></tr>`

/**
 * An account's purchases, newest first: date, pack, credits, price and rail; a payment settled on a
 * chain (x402) also names its network, its payer and its transaction. The portal and the
 * dashboard's Billing page show this one table.
 */
export const purchasesTable = (purchases: ReadonlyArray<Purchase>) =>
  purchases.length === 0
    ? html`<p>No purchases yet.</p>`
    : html`<table><caption>Newest first</caption><thead><tr><th scope="col">Date</th><th scope="col">Pack</th><th scope="col">Credits</th><th scope="col">Price</th><th scope="col">Rail</th></tr></thead>
<tbody>${purchases.map(purchaseRow)}</tbody></table>`

/** `/portal?session=...`: the local billing portal of one account, for the hour its link lives. */
export const portalPage = (
  config: Pick<AppConfigShape, "baseUrl" | "refundPolicy">,
  token: string,
  view: PortalView
) =>
  page(
    config.baseUrl,
    "Billing portal",
    html`<p>Account <code>${view.accountId}</code> · plan <code>${view.account.plan}</code> ·
${count(view.account.balanceCredits)} purchased credits and ${count(view.account.grantCredits)} grant credits left.</p>
<h2>Subscription</h2>
${subscriptionPart(config, token, view)}
<h2>Purchases</h2>
${purchasesTable(view.history.purchases)}
<p>${config.refundPolicy}</p>
<p>This link works for one hour. For a new one, open <a href="${config.baseUrl}/dashboard/billing">Billing in the dashboard</a>.</p>`,
    { testMode: true }
  )

/** An unknown or expired portal link. */
export const portalExpiredPage = (config: Pick<AppConfigShape, "baseUrl">) =>
  page(
    config.baseUrl,
    "Portal link not valid",
    html`<p class="error" role="alert">This billing-portal link is unknown or has expired (a link works for one hour).</p>
<p>Ask for a new one on <a href="${config.baseUrl}/dashboard/billing">the dashboard's Billing page</a>
(signed out, it asks you to sign in first).</p>`
  )
