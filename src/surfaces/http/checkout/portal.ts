import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { AppConfigShape } from "../../../config.ts"
import * as Row from "../../../store/rows.ts"
import { html, page } from "../pages/html.ts"
import { count, dollars, railLabel, when } from "./format.ts"

/** What the local billing portal shows of an account: its plan, its subscription, its purchases. */
const AccountRow = Schema.Struct({ plan: Row.Plan, balance_credits: Row.Int, grant_credits: Row.Int })
const SubscriptionRow = Schema.Struct({
  pack: Schema.String,
  rail: Schema.String,
  status: Schema.Literals(["active", "canceled"]),
  current_period_end: Row.Int,
  cancel_at_period_end: Schema.Boolean
})
const PurchaseRow = Schema.Struct({
  pack: Schema.String,
  rail: Schema.String,
  credits: Row.Int,
  price_usd_cents: Row.Int,
  currency: Schema.String,
  created_at: Row.Int
})
const decodeAccount = Row.decoder(AccountRow, "portal account")
const decodeSubscription = Row.decoder(SubscriptionRow, "portal subscription")
const decodePurchases = Row.decoder(PurchaseRow, "portal purchase")

/** The purchases listed: the newest ones, enough for any person reading the page. */
const purchasesShown = 100

export interface PortalView {
  readonly accountId: string
  readonly account: typeof AccountRow.Type
  readonly subscription: typeof SubscriptionRow.Type | undefined
  readonly purchases: ReadonlyArray<typeof PurchaseRow.Type>
}

export const readPortal = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [account] = yield* sql`SELECT plan, balance_credits, grant_credits FROM accounts
      WHERE id = ${accountId}`.pipe(Effect.flatMap(decodeAccount))
    // The active subscription, else the one that ended last.
    const [subscription] = yield* sql`SELECT pack, rail, status, current_period_end, cancel_at_period_end
      FROM subscriptions WHERE account_id = ${accountId}
      ORDER BY (status = 'active') DESC, created_at DESC LIMIT 1`.pipe(Effect.flatMap(decodeSubscription))
    const purchases = yield* sql`SELECT pack, rail, credits, price_usd_cents, currency, created_at
      FROM purchases WHERE account_id = ${accountId}
      ORDER BY created_at DESC, id DESC LIMIT ${purchasesShown}`.pipe(Effect.flatMap(decodePurchases))
    if (account === undefined) return undefined
    return { accountId, account, subscription, purchases } satisfies PortalView
  })

const subscriptionPart = (config: Pick<AppConfigShape, "baseUrl">, token: string, view: PortalView) => {
  const subscription = view.subscription
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

const purchaseRow = (purchase: PortalView["purchases"][number]) =>
  html`<tr><td>${when(purchase.created_at)}</td><td><code>${purchase.pack}</code></td><td>${count(purchase.credits)}</td><td>${
    purchase.currency === "usd"
      ? dollars(purchase.price_usd_cents)
      : `${purchase.price_usd_cents} ${purchase.currency}`
  }</td><td>${purchase.rail}</td></tr>`

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
${count(view.account.balance_credits)} purchased credits and ${count(view.account.grant_credits)} grant credits left.</p>
<h2>Subscription</h2>
${subscriptionPart(config, token, view)}
<h2>Purchases</h2>
${
  view.purchases.length === 0
    ? html`<p>No purchases yet.</p>`
    : html`<table><caption>Newest first</caption><thead><tr><th scope="col">Date</th><th scope="col">Pack</th><th scope="col">Credits</th><th scope="col">Price</th><th scope="col">Rail</th></tr></thead>
<tbody>${view.purchases.map(purchaseRow)}</tbody></table>`
}
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
