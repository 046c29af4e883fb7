import type { AppConfigShape } from "../../../config.ts"
import type { Usage } from "../../../contract/schemas.ts"
import type { Pack } from "../../../domain/plans.ts"
import type { TokenListing } from "../../../services/Identities.ts"
import type { IssuedKey, KeyListing } from "../../../services/Keys.ts"
import { count, dollars, railLabel } from "../checkout/format.ts"
import { type Html, html } from "../pages/html.ts"
import { type DayUsage, usageChart, usageTable } from "./chart.ts"
import {
  accountQuery,
  dashboardPage,
  errorNote,
  type Frame,
  formFields,
  hidden,
  itemList,
  okNote
} from "./layout.ts"
import type { ListedReceipt } from "./receipts.ts"

type Config = Pick<AppConfigShape, "baseUrl" | "policy" | "checkoutRails">

export interface Notes {
  readonly ok?: string | undefined
  readonly error?: string | undefined
}

export const notes = (options: Notes) => html`${okNote(options.ok)}${errorNote(options.error)}`

const figure = (label: string, value: string | number, detail?: Html | string) =>
  html`<div class="figure">${label}<strong>${typeof value === "number" ? count(value) : value}</strong>${detail ?? ""}</div>`

const dateOf = (iso: string | null) => (iso === null ? "never" : `${iso.slice(0, 16).replace("T", " ")} UTC`)

/** Overview: plan, spendable credits, today's free budget and the period end. */
export const overviewPage = (frame: Frame, usage: typeof Usage.Type, options: Notes = {}) => {
  const q = accountQuery(frame.account)
  const balance = usage.balance
  const free = usage.free_tier
  const subscription = usage.subscription
  return dashboardPage(
    frame,
    "overview",
    "Overview",
    html`${notes(options)}
<div class="figures">
${figure("Plan", usage.plan, usage.state === "active" ? "" : html`<span class="error">Suspended: write to the operator's support address.</span>`)}
${figure("Spendable credits", balance?.total ?? 0, html`grant ${count(balance?.grant ?? 0)}, purchased ${count(balance?.purchased ?? 0)}`)}
${
  free === undefined
    ? figure("Free budget", "not used", "Paid plans spend credits, not the free tier.")
    : figure(
        "Free budget left today",
        free.remaining_today,
        html`of ${count(free.credits_per_ip_day)} for ${free.ip}; resets ${dateOf(free.resets_at)}`
      )
}
${
  subscription === undefined
    ? figure(
        "Period end",
        "no subscription",
        html`<a href="${frame.baseUrl}/dashboard/billing?${q}">See packs</a>`
      )
    : figure(
        "Period end",
        dateOf(subscription.current_period_end),
        `${subscription.pack}, ${subscription.status}${subscription.cancel_at_period_end ? ", ends then" : ", renews then"}`
      )
}
${figure("Used today", usage.today.credits, html`credits in ${count(usage.today.calls)} ${usage.today.calls === 1 ? "call" : "calls"}`)}
</div>
${
  (balance?.total ?? 0) === 0 && free !== undefined
    ? html`<p>This account has no credits beyond the free budget. <a href="${frame.baseUrl}/dashboard/billing?${q}">Buy a pack</a>
to keep calling when the free budget runs out.</p>`
    : ""
}
<h2>Next steps</h2>
<ul>
<li><a href="${frame.baseUrl}/dashboard/keys?${q}">Create or rotate a key</a></li>
<li><a href="${frame.baseUrl}/dashboard/usage?${q}">See usage and receipts</a></li>
<li><a href="${frame.baseUrl}/dashboard/billing?${q}">Set a balance alert, buy credits, open the billing portal</a></li>
</ul>`
  )
}

const receiptRow = (receipt: ListedReceipt) =>
  html`<tr><td><code>${receipt.id}</code></td><td>${dateOf(receipt.created_at)}</td><td>${receipt.operation}</td><td class="n">${receipt.charged}</td><td class="n">${receipt.funding.free_tier}/${receipt.funding.grant}/${receipt.funding.balance}</td></tr>`

export interface ReceiptView {
  readonly receipts: ReadonlyArray<ListedReceipt>
  readonly next: string | undefined
  readonly operation: string | undefined
  readonly day: string | undefined
  readonly paged: boolean
}

const receiptsSection = (
  frame: Frame,
  operations: ReadonlyArray<string>,
  view: ReceiptView,
  error?: string
) => {
  const base = `${frame.baseUrl}/dashboard`
  const filters = new URLSearchParams({ account: frame.account.id })
  if (view.operation !== undefined) filters.set("operation", view.operation)
  if (view.day !== undefined) filters.set("date", view.day)
  const older = new URLSearchParams(filters)
  if (view.next !== undefined) older.set("before", view.next)
  return html`<section aria-labelledby="receipts"><h2 id="receipts">Receipts</h2>
<form method="get" action="${base}/usage" class="row">${hidden("account", frame.account.id)}
<div><label for="operation">Operation</label><select id="operation" name="operation"><option value="">All operations</option>${operations.map(
    (operation) =>
      html`<option value="${operation}"${operation === view.operation ? html` selected` : ""}>${operation}</option>`
  )}</select></div>
<div><label for="date">Day (UTC)</label><input id="date" name="date" type="date" value="${view.day ?? ""}"></div>
<button type="submit">Filter</button></form>
${errorNote(error)}
${
  view.receipts.length === 0
    ? html`<p>${
        view.operation === undefined && view.day === undefined
          ? view.paged
            ? "No older receipts."
            : "No receipts yet: every charged call leaves one. Make a call with one of your keys, then reload this page."
          : "No receipt matches these filters. Choose another operation or day, or clear them."
      }</p>`
    : html`<table tabindex="0"><caption>Receipts, newest first</caption>
<thead><tr><th scope="col">Receipt</th><th scope="col">When</th><th scope="col">Operation</th><th scope="col">Credits</th><th scope="col">Free/grant/purchased</th></tr></thead>
<tbody>${view.receipts.map(receiptRow)}</tbody></table>`
}
<p>${view.paged ? html`<a href="${base}/usage?${filters.toString()}#receipts">Newest</a> · ` : ""}${
    view.next === undefined
      ? ""
      : html`<a href="${base}/usage?${older.toString()}#receipts">Older receipts</a> · `
  }<a href="${base}/receipts.csv?${filters.toString()}">Download these receipts as CSV</a></p></section>`
}

/** Usage: the 30-day chart with its table, then the receipts. */
export const usagePage = (
  frame: Frame,
  days: ReadonlyArray<DayUsage>,
  platforms: ReadonlyArray<string>,
  operations: ReadonlyArray<string>,
  receipts: ReceiptView,
  error?: string
) => {
  const shown = platforms.filter((platform) => days.some((day) => (day.byPlatform[platform] ?? 0) > 0))
  const columns = shown.length === 0 ? platforms.slice(0, 1) : shown
  return dashboardPage(
    frame,
    "usage",
    "Usage",
    html`<section aria-labelledby="per-day"><h2 id="per-day">Credits per day, by platform</h2>
${usageChart(days, columns)}
${usageTable(days, columns)}</section>
${receiptsSection(frame, operations, receipts, error)}`
  )
}

const keyActions = (frame: Frame, key: KeyListing) =>
  key.revoked_at !== null
    ? html`<p>Revoked ${dateOf(key.revoked_at)}.</p>`
    : html`<form method="post" action="${frame.baseUrl}/dashboard/keys/rotate" class="inline">${formFields(frame.csrf, frame.account)}${hidden("key_id", key.key_id)}<button type="submit" aria-label="Rotate key ${key.hint}">Rotate…</button></form><form method="post" action="${frame.baseUrl}/dashboard/keys/revoke" class="inline">${formFields(frame.csrf, frame.account)}${hidden("key_id", key.key_id)}<button type="submit" aria-label="Revoke key ${key.hint}">Revoke…</button></form>`

/** A secret's one showing, with the copy button. */
const revealed = (issued: IssuedKey, replaces?: string) =>
  html`<section aria-labelledby="new-key" class="note"><h2 id="new-key">Your new key${replaces === undefined ? "" : html` (replaces <code>${replaces}</code>, which stopped working)`}</h2>
<p><strong>Copy it now: this is the only time it is shown.</strong> It is stored only as a hash; if you lose it, rotate it.</p>
<code class="secret" id="new-key-secret">${issued.key}</code>
<button type="button" data-copy="new-key-secret" hidden>Copy the key</button>
<p>Send it as <code>Authorization: Bearer &lt;key&gt;</code>.</p></section>`

/** Keys: list, create, and the one showing of a new or rotated key. */
export const keysPage = (
  frame: Frame,
  keys: ReadonlyArray<KeyListing>,
  options: Notes & {
    readonly issued?: IssuedKey | undefined
    readonly replaces?: string | undefined
    readonly grant?: number | undefined
  } = {}
) =>
  dashboardPage(
    frame,
    "keys",
    "Keys",
    html`${notes(options)}${options.issued === undefined ? "" : revealed(options.issued, options.replaces)}${
      (options.grant ?? 0) > 0
        ? okNote(`This first key also brought a one-time grant of ${count(options.grant!)} credits.`)
        : ""
    }
${
  keys.length === 0
    ? html`<p>This account has no keys. Create one below to call the API.</p>`
    : itemList(
        `Keys of ${frame.account.id}`,
        keys.map((key) => ({
          title: key.label ?? "(no label)",
          facts: [
            ["Key", html`<code>${key.hint}</code>`],
            ["Created", dateOf(key.created_at)],
            ["Last used", dateOf(key.last_used_at)]
          ],
          actions: keyActions(frame, key)
        }))
      )
}
<h2>Create a key</h2>
<form method="post" action="${frame.baseUrl}/dashboard/keys">${formFields(frame.csrf, frame.account)}
<label for="label">Label (optional)</label><input id="label" name="label" maxlength="100" autocomplete="off">
<button type="submit">Create key</button></form>`,
    { copy: options.issued !== undefined }
  )

/** The confirmation step of a rotation or revocation. */
export const confirmKeyPage = (frame: Frame, action: "rotate" | "revoke", key: KeyListing) =>
  dashboardPage(
    frame,
    "keys",
    action === "revoke" ? "Revoke this key?" : "Rotate this key?",
    html`<p>Key <code>${key.hint}</code>${key.label === null ? "" : html` (${key.label})`}, created ${dateOf(key.created_at)},
last used ${dateOf(key.last_used_at)}.</p>
<p>${
      action === "revoke"
        ? "It stops working at once: every program that uses it gets UNAUTHORIZED. The account, its credits and its other keys stay."
        : "The old secret stops working at once; the next page shows the new one, once."
    }</p>
<form method="post" action="${frame.baseUrl}/dashboard/keys/${action}">${formFields(frame.csrf, frame.account)}${hidden("key_id", key.key_id)}${hidden("confirm", "yes")}
<button type="submit" class="${action === "revoke" ? "danger" : ""}">${action === "revoke" ? "Yes, revoke it" : "Yes, rotate it"}</button>
<a href="${frame.baseUrl}/dashboard/keys?${accountQuery(frame.account)}">No, keep it</a></form>`
  )

const packForm = (config: Config, frame: Frame, pack: Pack) =>
  html`<form method="post" action="${config.baseUrl}/dashboard/packs">${formFields(frame.csrf, frame.account)}${hidden("pack", pack.pack)}${
    config.checkoutRails.length < 2
      ? ""
      : html`<label for="rail-${pack.pack}">Pay with</label><select id="rail-${pack.pack}" name="rail">${config.checkoutRails.map(
          (rail) => html`<option value="${rail}">${railLabel(rail)}</option>`
        )}</select>`
  }<button type="submit">${
    pack.mode === "subscription"
      ? `Subscribe to ${pack.pack}: ${dollars(pack.price_usd_cents)} a month for ${count(pack.credits_per_month ?? 0)} credits a month`
      : `Buy ${pack.pack}: ${dollars(pack.price_usd_cents)} for ${count(pack.credits ?? 0)} credits`
  }</button></form>`

/** Billing: the balance alert, the packs and the billing portal. */
export const billingPage = (config: Config, frame: Frame, usage: typeof Usage.Type, options: Notes = {}) =>
  dashboardPage(
    frame,
    "billing",
    "Billing",
    html`${notes(options)}
<p>Spendable credits: <strong>${count(usage.balance?.total ?? 0)}</strong> (grant ${count(usage.balance?.grant ?? 0)},
purchased ${count(usage.balance?.purchased ?? 0)}). Plan <code>${usage.plan}</code>.</p>
<section aria-labelledby="alert"><h2 id="alert">Balance alert</h2>
<p>We email you once each time the spendable credits fall below this number. 0 turns the alert off.</p>
<form method="post" action="${config.baseUrl}/dashboard/alert" class="row">${formFields(frame.csrf, frame.account)}
<div><label for="threshold">Threshold (credits)</label><input id="threshold" name="threshold" type="number" min="0" step="1" inputmode="numeric" required></div>
<button type="submit">Set alert</button></form></section>
<section aria-labelledby="packs"><h2 id="packs">Buy credits</h2>
${config.policy.packs.map((pack) => packForm(config, frame, pack))}
<p>The credits land on this account; its keys keep working. <a href="${config.baseUrl}/upgrade?${accountQuery(frame.account)}">Compare the packs</a>.</p></section>
<section aria-labelledby="portal"><h2 id="portal">Billing portal</h2>
<p>Purchases, the subscription and its cancellation.${
      usage.purchases === undefined
        ? " This account has bought nothing yet."
        : ` ${usage.purchases.count} ${usage.purchases.count === 1 ? "purchase" : "purchases"} so far.`
    }</p>
<form method="post" action="${config.baseUrl}/dashboard/portal">${formFields(frame.csrf, frame.account)}<button type="submit">Open the billing portal</button></form></section>`
  )

/** Management tokens: every sign-in of this email, and its revocation. */
export const tokensPage = (frame: Frame, tokens: ReadonlyArray<TokenListing>, options: Notes = {}) =>
  dashboardPage(
    frame,
    "tokens",
    "Sign-ins",
    html`${notes(options)}
<p>Each sign-in (this browser, a command-line client, a device) holds a management token of <strong>${frame.email}</strong>.
Revoke the ones you do not recognise; they stop working at once.</p>
${itemList(
  "Management tokens",
  tokens.map((token) => ({
    title: `${token.label}${token.current ? " (this browser)" : ""}`,
    facts: [
      ["Created", dateOf(token.created_at)],
      ["Last used", dateOf(token.last_used_at)],
      ["Expires", dateOf(token.expires_at)]
    ],
    actions: html`<form method="post" action="${frame.baseUrl}/dashboard/tokens/revoke">${formFields(frame.csrf, frame.account)}${hidden("token_id", token.token_id)}${
      token.current
        ? html`<button type="submit">Sign out this browser</button>`
        : html`<button type="submit" aria-label="Revoke the ${token.label} sign-in created ${dateOf(token.created_at)}">Revoke</button>`
    }</form>`
  }))
)}`
  )

/** A dashboard request that could not be done, with what to do next. */
export const failurePage = (frame: Frame, title: string, message: string, next: Html) =>
  dashboardPage(frame, "overview", title, html`<p class="error" role="alert">${message}</p><p>${next}</p>`)
