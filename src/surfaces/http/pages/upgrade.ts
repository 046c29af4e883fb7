import { type AppConfigShape, links } from "../../../config.ts"
import { freeTierSentence, type Pack } from "../../../domain/plans.ts"
import { count, dollars, railLabel } from "../checkout/format.ts"
import { html, page } from "./html.ts"

type Config = Pick<AppConfigShape, "baseUrl" | "policy" | "checkoutRails">

const packRow = (pack: Pack) =>
  html`<tr><th scope="row"><code>${pack.pack}</code></th><td>${
    pack.mode === "subscription" ? "monthly subscription" : "one-time"
  }</td><td>${dollars(pack.price_usd_cents)}${pack.mode === "subscription" ? " a month" : ""}</td><td>${
    pack.credits_per_month !== undefined
      ? `${count(pack.credits_per_month)} credits a month`
      : `${count(pack.credits ?? 0)} credits`
  }</td></tr>`

/** With one rail configured there is nothing to choose: the form sends none and the default applies. */
const railChoice = (config: Config, pack: Pack) =>
  config.checkoutRails.length < 2
    ? ""
    : html`<fieldset><legend>Pay with</legend>${config.checkoutRails.map(
        (rail, index) =>
          html`<label for="rail-${pack.pack}-${rail}"><input type="radio" id="rail-${pack.pack}-${rail}" name="rail" value="${rail}"${
            index === 0 ? html` checked` : ""
          }>${railLabel(rail)}</label>`
      )}</fieldset>`

const buyLabel = (pack: Pack) =>
  pack.mode === "subscription"
    ? `Subscribe to ${pack.pack} (${dollars(pack.price_usd_cents)} a month)`
    : `Buy ${pack.pack} (${dollars(pack.price_usd_cents)})`

const packForm = (config: Config, account: string | undefined, pack: Pack) =>
  html`<section aria-labelledby="pack-${pack.pack}"><h3 id="pack-${pack.pack}"><code>${pack.pack}</code></h3>
<form method="post" action="${config.baseUrl}/upgrade"><input type="hidden" name="pack" value="${pack.pack}">${
    account === undefined ? "" : html`<input type="hidden" name="account" value="${account}">`
  }${railChoice(config, pack)}<button type="submit">${buyLabel(pack)}</button></form></section>`

/**
 * `/upgrade`, where `upgrade_url` and `offer.checkout_url` lead: the configured packs, one form per
 * pack that starts a checkout (`POST /upgrade`) for the account of `?account=`, or for a new account
 * whose key the page after payment shows once.
 */
export const upgradePage = (config: Config, account: string | undefined, error?: string) =>
  page(
    config.baseUrl,
    "Credit packs",
    html`${error === undefined ? "" : html`<p class="error" role="alert">${error}</p>`}${
      account === undefined
        ? html`<p>No account is named: a checkout from here makes a new account, and the page after payment shows its key once.
Coming from an error? Open its <code>upgrade_url</code> instead, so the credits land on the key you already have.</p>`
        : html`<p>For account <code>${account}</code>. The credits land on this account: the key you already have keeps working, nothing to reconfigure.</p>`
    }
<table><caption>Packs</caption>
<thead><tr><th scope="col">Pack</th><th scope="col">Kind</th><th scope="col">Price (USD)</th><th scope="col">Credits</th></tr></thead>
<tbody>${config.policy.packs.map(packRow)}</tbody></table>
<h2>Choose a pack</h2>
${config.policy.packs.map((pack) => packForm(config, account, pack))}
<p>A <code>flex</code> pack adds its credits once and sets the plan to <code>flex</code>; <code>production</code> sets the
plan to <code>production</code> and adds its credits at every paid month. The billing portal (on the dashboard's Billing page)
lists purchases and cancels a subscription at the end of its period.</p>
<h2>After paying</h2>
<p>Retry as the error's <code>offer.resume</code> says: <code>INSUFFICIENT_CREDITS</code> with the same
<code>Idempotency-Key</code>, <code>TRIAL_CAP_EXCEEDED</code> and <code>BUDGET_EXHAUSTED</code> with a fresh one.
A failed call was never charged. Meanwhile the free tier keeps answering. ${freeTierSentence(config.policy.freeCreditsPerIpDay)}</p>
<p>See <a href="${config.baseUrl}/docs/errors">the error codes</a> and <a href="${links(config.baseUrl).docs}">the API reference</a>.</p>`,
    {
      testMode: config.checkoutRails.includes("local"),
      description:
        "Credit packs for the svc data API: what each costs and gives, and a checkout for your account."
    }
  )
