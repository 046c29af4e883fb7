import { type AppConfigShape, links } from "../../../config.ts"
import type { Pack } from "../../../domain/plans.ts"
import { html, page } from "./html.ts"

const dollars = (cents: number) => `$${(cents / 100).toFixed(2)}`
const count = (n: number) => n.toLocaleString("en-US")

const packRow = (pack: Pack) =>
  html`<tr><th scope="row"><code>${pack.pack}</code></th><td>${
    pack.mode === "subscription" ? "monthly subscription" : "one-time"
  }</td><td>${dollars(pack.price_usd_cents)}${pack.mode === "subscription" ? " a month" : ""}</td><td>${
    pack.credits_per_month !== undefined
      ? `${count(pack.credits_per_month)} credits a month`
      : `${count(pack.credits ?? 0)} credits`
  }</td></tr>`

/**
 * `/upgrade`, where `upgrade_url` and `offer.checkout_url` lead: the configured packs and, until
 * checkout exists, the honest way to get one (the operator credits the account).
 */
export const upgradePage = (
  config: Pick<AppConfigShape, "baseUrl" | "policy">,
  account: string | undefined
) =>
  page(
    config.baseUrl,
    "Credit packs",
    html`${account === undefined ? "" : html`<p>For account <code>${account}</code>.</p>`}
<table><caption>Packs</caption>
<thead><tr><th scope="col">Pack</th><th scope="col">Kind</th><th scope="col">Price (USD)</th><th scope="col">Credits</th></tr></thead>
<tbody>${config.policy.packs.map(packRow)}</tbody></table>
<h2>How to get a pack today</h2>
<p>Online checkout is not available yet; it is coming. Until then the operator of this service credits
accounts by hand: send them your account id${account === undefined ? html` (<code>account_id</code> in the mint response and in <code>GET /v1/usage</code>)` : ""}
and the pack you want. The credits land on the account of the key you already have: nothing to reconfigure.</p>
<p>Operators do it with the admin command line:
<code>npm run cli -- admin credit --account ${account ?? "acct_..."} --credits N</code> and
<code>npm run cli -- admin plan --account ${account ?? "acct_..."} --plan flex|production</code>.</p>
<h2>After the credits land</h2>
<p>Retry as the error's <code>offer.resume</code> says: <code>INSUFFICIENT_CREDITS</code> with the same
<code>Idempotency-Key</code>, <code>TRIAL_CAP_EXCEEDED</code> and <code>BUDGET_EXHAUSTED</code> with a fresh one.
A failed call was never charged. Meanwhile the free tier keeps answering: ${config.policy.freeCreditsPerIpDay} credits per IP per UTC day.</p>
<p>See <a href="${config.baseUrl}/docs/errors">the error codes</a> and <a href="${links(config.baseUrl).docs}">the API reference</a>.</p>`
  )
