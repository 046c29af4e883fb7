import { createHash } from "node:crypto"
import type { Account } from "../../../domain/accounts.ts"
import { contentSecurityPolicy } from "../../../domain/html.ts"
import { forPages } from "../../common/wording.ts"
import { type Html, head, html, productName, testModeBadge } from "../pages/html.ts"
import { labelCells } from "../pages/stylesheet.ts"

/** The dashboard's sections, in the order of its navigation. */
export type Section = "overview" | "usage" | "keys" | "billing" | "webhooks" | "tokens" | "apps" | "activity"

const sections: ReadonlyArray<{ readonly id: Section; readonly path: string; readonly label: string }> = [
  { id: "overview", path: "/dashboard", label: "Overview" },
  { id: "usage", path: "/dashboard/usage", label: "Usage" },
  { id: "keys", path: "/dashboard/keys", label: "Keys" },
  { id: "billing", path: "/dashboard/billing", label: "Billing" },
  { id: "webhooks", path: "/dashboard/webhooks", label: "Webhooks" },
  { id: "tokens", path: "/dashboard/tokens", label: "Sign-ins" },
  { id: "apps", path: "/dashboard/apps", label: "Connected apps" },
  { id: "activity", path: "/dashboard/activity", label: "Activity" }
]

/**
 * The copy button's script, the only script of any page: it shows the (hidden) buttons and copies
 * the element they name. Without it the secret is still plain, selectable text. The Clipboard API
 * exists only in secure contexts (HTTPS, localhost); elsewhere the text is selected and copied.
 */
const copyScript =
  "for(const b of document.querySelectorAll('button[data-copy]')){b.hidden=false;b.addEventListener('click',()=>{const t=document.getElementById(b.dataset.copy);const done=()=>{b.textContent='Copied'};const fail=()=>{b.textContent='Select the text to copy it'};if(navigator.clipboard){navigator.clipboard.writeText(t.textContent).then(done,fail)}else{getSelection().selectAllChildren(t);document.execCommand('copy')?done():fail()}})}"
const copyScriptHash = `sha256-${createHash("sha256").update(copyScript).digest("base64")}`

/**
 * The account switcher's script: choosing an account switches to it (the form is sent on change),
 * and the Switch button, there for a browser without scripts, is hidden.
 */
const switchScript =
  "const s=document.getElementById('account-switch');if(s){for(const b of s.form.querySelectorAll('button'))b.hidden=true;s.addEventListener('change',()=>s.form.submit())}"
const switchScriptHash = `sha256-${createHash("sha256").update(switchScript).digest("base64")}`

/** As the sign-in pages' policy, plus the two scripts by their hashes and forms that may end at a payment provider. */
export const dashboardCsp = (formTargets: ReadonlyArray<string>) =>
  contentSecurityPolicy({
    scripts: [`'${copyScriptHash}'`, `'${switchScriptHash}'`],
    images: ["'self'"],
    formTargets
  })

/** The day an account was made, as the switcher names it. */
const day = (millis: number) => new Date(millis).toISOString().slice(0, 10)

/**
 * An account as a person tells it apart: plan, since when, its id's end (the accounts of one sign-in
 * share its email, shown beside the switcher).
 */
export const accountLabel = (account: Account) =>
  `${account.plan.charAt(0).toUpperCase()}${account.plan.slice(1)} account since ${day(account.createdAt)} (...${account.id.slice(-4)})`

/** `?account=` on a dashboard link. */
export const accountQuery = (account: Account) => `account=${encodeURIComponent(account.id)}`

export const hidden = (name: string, value: string) =>
  html`<input type="hidden" name="${name}" value="${value}">`

/** The hidden fields every dashboard form carries: the session's CSRF token and the account it acts on. */
export const formFields = (csrf: string, account: Account) =>
  html`${hidden("csrf", csrf)}${hidden("account", account.id)}`

/** A refusal in the page's words: the dashboard's pages, not the REST routes the services name. */
export const errorNote = (message: string | undefined): Html =>
  message === undefined ? html`` : html`<p class="error" role="alert">${forPages(message, "")}</p>`

export const okNote = (message: string | undefined): Html =>
  message === undefined ? html`` : html`<p class="note" role="status">${message}</p>`

type Content = Html | string

/**
 * Records (keys, sign-ins, apps) as a list of cards rather than a table: a phone shows each whole,
 * its buttons included, without scrolling sideways.
 */
export const itemList = (
  label: string,
  items: ReadonlyArray<{
    readonly title: Content
    readonly facts: ReadonlyArray<readonly [string, Content]>
    readonly actions: Content
  }>
) =>
  html`<ul class="items" aria-label="${label}">${items.map(
    (item) =>
      html`<li><strong>${item.title}</strong><dl>${item.facts.map(
        ([term, value]) => html`<dt>${term}</dt><dd>${value}</dd>`
      )}</dl>${item.actions}</li>`
  )}</ul>`

export interface Notes {
  readonly ok?: string | undefined
  readonly error?: string | undefined
}

/** What the last action did, or why it could not. */
export const notes = (options: Notes) => html`${okNote(options.ok)}${errorNote(options.error)}`

/** A time as every page writes it: "2026-11-23 15:49 UTC". */
export const dateOf = (iso: string | null) =>
  iso === null ? "never" : `${iso.slice(0, 16).replace("T", " ")} UTC`

/**
 * A plain `GET` form: several accounts are switched without any script (its button), and with it as
 * soon as one is chosen (`switchScript`).
 */
const switcher = (baseUrl: string, section: Section, accounts: ReadonlyArray<Account>, current: Account) => {
  if (accounts.length < 2) return html`<span>Account <code>${current.id}</code> (${current.plan})</span>`
  const path = sections.find((entry) => entry.id === section)?.path ?? "/dashboard"
  return html`<form method="get" action="${baseUrl}${path}" class="row"><div><label for="account-switch">Account</label>
<select id="account-switch" name="account">${accounts.map(
    (account) =>
      html`<option value="${account.id}"${account.id === current.id ? html` selected` : ""}>${accountLabel(account)}</option>`
  )}</select></div><button type="submit" class="secondary">Switch</button></form>`
}

export interface Frame {
  readonly baseUrl: string
  readonly email: string
  readonly csrf: string
  readonly accounts: ReadonlyArray<Account>
  readonly account: Account
  /** Payments go through the built-in test rail: the header says "Test mode". */
  readonly testMode: boolean
}

/**
 * A whole dashboard page: the site header (the product's name, "Test mode" on the local rail, the
 * account switcher, who is signed in), the sections as tabs, and one `<h1>`.
 */
export const dashboardPage = (
  frame: Frame,
  section: Section,
  title: string,
  body: Html,
  options: { readonly copy?: boolean } = {}
): string =>
  labelCells(
    html`<!doctype html>
<html lang="en"><head>${head(`${title} · Dashboard · ${productName}`)}</head>
<body><header class="site"><a class="brand" href="${frame.baseUrl}/">${productName}</a>${
      frame.testMode ? testModeBadge : ""
    }
<div class="who">${switcher(frame.baseUrl, section, frame.accounts, frame.account)}<span>Signed in as <strong>${frame.email}</strong></span>
<form method="post" action="${frame.baseUrl}/logout" class="inline">${hidden("csrf", frame.csrf)}<button type="submit">Sign out</button></form></div></header>
<nav class="tabs" aria-label="Dashboard"><ul>${sections.map(
      (entry) =>
        html`<li><a href="${frame.baseUrl}${entry.path}?${accountQuery(frame.account)}"${
          entry.id === section ? html` aria-current="page"` : ""
        }>${entry.label}</a></li>`
    )}<li><a href="${frame.baseUrl}/docs">API reference</a></li></ul></nav>
<main><h1>${title}</h1>
${body}
</main>${options.copy === true ? html`<script>${{ _tag: "Html", value: copyScript }}</script>` : ""}${
      frame.accounts.length < 2 ? "" : html`<script>${{ _tag: "Html", value: switchScript }}</script>`
    }</body></html>`.value
  )

/** A dashboard request that could not be done, with what to do next. */
export const failurePage = (frame: Frame, title: string, message: string, next: Html) =>
  dashboardPage(frame, "overview", title, html`${errorNote(message)}<p>${next}</p>`)
