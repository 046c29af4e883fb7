import { type AppConfigShape, links } from "../../../config.ts"
import { freeTierSentence, type Pack } from "../../../domain/plans.ts"
import { prices } from "../../../domain/pricing.ts"
import { count, dollars, railLabel } from "../checkout/format.ts"
import { html, page } from "./html.ts"

type Config = Pick<AppConfigShape, "baseUrl" | "policy" | "checkoutRails">

/** A pack's name as a word (its id, `flex`, stays the form's value). */
const packName = (pack: Pack) => `${pack.pack.charAt(0).toUpperCase()}${pack.pack.slice(1)}`

const packCredits = (pack: Pack) => pack.credits ?? pack.credits_per_month ?? 0

/**
 * What a number of credits buys, in calls, each priced by the rule that charges it
 * (`domain/pricing.ts`): a profile with its first two sections, a forum search page, a page of posts.
 */
const buys = (credits: number) => {
  const calls = (price: number) => count(Math.floor(credits / price))
  return `${calls(prices.getProfile(2).credits)} profiles, or ${calls(prices.forumSearch().credits)} forum searches, or ${calls(
    prices.getTweets().credits
  )} pages of posts`
}

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
    ? `Subscribe to ${packName(pack)} (${dollars(pack.price_usd_cents)} a month)`
    : `Buy ${packName(pack)} (${dollars(pack.price_usd_cents)})`

/** One pack, once: its name, price, credits, what they buy, and the form that starts its checkout. */
const packCard = (config: Config, account: string | undefined, pack: Pack) =>
  html`<section class="card pack" aria-labelledby="pack-${pack.pack}"><h2 id="pack-${pack.pack}">${packName(pack)}</h2>
<p class="price"><strong>${dollars(pack.price_usd_cents)}${pack.mode === "subscription" ? " a month" : ""}</strong> ${
    pack.mode === "subscription" ? "monthly subscription" : "one-time"
  }</p>
<p><strong>${
    pack.credits_per_month !== undefined
      ? `${count(pack.credits_per_month)} credits a month`
      : `${count(pack.credits ?? 0)} credits`
  }</strong>: ${buys(packCredits(pack))}${pack.mode === "subscription" ? " every month" : ""}.</p>
<form method="post" action="${config.baseUrl}/upgrade"><input type="hidden" name="pack" value="${pack.pack}">${
    account === undefined ? "" : html`<input type="hidden" name="account" value="${account}">`
  }${railChoice(config, pack)}<button type="submit">${buyLabel(pack)}</button></form></section>`

/**
 * `/upgrade`, where `upgrade_url` and `offer.checkout_url` lead: what credits buy, then each
 * configured pack once with the form that starts its checkout (`POST /upgrade`) for the account of
 * `?account=`, or for a new account whose key the page after payment shows once; then where the
 * credits land, the test rail's caveat, and what to do after paying.
 */
export const upgradePage = (config: Config, account: string | undefined, error?: string) =>
  page(
    config.baseUrl,
    "Credit packs",
    html`${error === undefined ? "" : html`<p class="error" role="alert">${error}</p>`}<p class="lead">A paid key gets realtime data and every page,
not only the first; each call costs what it costs on a free key (<a href="${config.baseUrl}/#price">credits per call</a>).</p>
<div class="figures">${config.policy.packs.map((pack) => packCard(config, account, pack))}</div>
<p>${
      account === undefined
        ? html`No account is named: a checkout from here makes a new account, and the page after payment shows its key once.
Coming from an error? Open its <code>upgrade_url</code> instead, so the credits land on the key you already have.`
        : html`For account <code>${account}</code>. The credits land on this account: the key you already have keeps working, nothing to reconfigure.`
    }</p>${
      config.checkoutRails.includes("local")
        ? html`<p class="note-test">Test mode: the built-in checkout takes no card and moves no money; the credits are added all the same.</p>`
        : ""
    }
<p>Flex adds its credits once and sets the plan to flex; Production sets the plan to production and adds its credits at every
paid month. The billing portal (on the dashboard's Billing page) lists purchases and cancels a subscription at the end of its period.</p>
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
