import { createHash } from "node:crypto"
import type { Account } from "../../../domain/accounts.ts"
import { contentSecurityPolicy } from "../../../domain/html.ts"
import { type Html, html } from "../pages/html.ts"

/** The dashboard's sections, in the order of its navigation. */
export type Section = "overview" | "usage" | "keys" | "billing" | "webhooks" | "tokens" | "apps"

const sections: ReadonlyArray<{ readonly id: Section; readonly path: string; readonly label: string }> = [
  { id: "overview", path: "/dashboard", label: "Overview" },
  { id: "usage", path: "/dashboard/usage", label: "Usage" },
  { id: "keys", path: "/dashboard/keys", label: "Keys" },
  { id: "billing", path: "/dashboard/billing", label: "Billing" },
  { id: "webhooks", path: "/dashboard/webhooks", label: "Webhooks" },
  { id: "tokens", path: "/dashboard/tokens", label: "Sign-ins" },
  { id: "apps", path: "/dashboard/apps", label: "Connected apps" }
]

/**
 * The copy button's script, the only script of any page: it shows the (hidden) buttons and copies
 * the element they name. Without it the secret is still plain, selectable text. The Clipboard API
 * exists only in secure contexts (HTTPS, localhost); elsewhere the text is selected and copied.
 */
const copyScript =
  "for(const b of document.querySelectorAll('button[data-copy]')){b.hidden=false;b.addEventListener('click',()=>{const t=document.getElementById(b.dataset.copy);const done=()=>{b.textContent='Copied'};const fail=()=>{b.textContent='Select the text to copy it'};if(navigator.clipboard){navigator.clipboard.writeText(t.textContent).then(done,fail)}else{getSelection().selectAllChildren(t);document.execCommand('copy')?done():fail()}})}"
const copyScriptHash = `sha256-${createHash("sha256").update(copyScript).digest("base64")}`

/** As the sign-in pages' policy, plus the copy script by its hash and forms that may end at a payment provider. */
export const dashboardCsp = (formTargets: ReadonlyArray<string>) =>
  contentSecurityPolicy({ scripts: [`'${copyScriptHash}'`], images: ["'self'"], formTargets })

const style =
  "body{font-family:system-ui,sans-serif;max-width:60rem;margin:0 auto;padding:0 1rem 2rem;line-height:1.5;color:#1a1a1a;overflow-wrap:break-word}" +
  "header{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;align-items:center;justify-content:space-between;border-bottom:1px solid #ccc;padding:.75rem 0}" +
  "nav ul{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1rem;margin:0;padding:0}a{color:#0645ad}a[aria-current=page]{font-weight:700;color:#1a1a1a}" +
  "code{background:#f0f0f0;padding:0 .2rem;border-radius:3px}table{border-collapse:collapse;display:block;max-width:100%;overflow-x:auto;margin:.5rem 0}" +
  "th,td{border:1px solid #ccc;padding:.3rem .6rem;text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}" +
  "section{border-top:1px solid #ddd;padding:.5rem 0}label{display:block;margin:.5rem 0 .25rem;font-weight:600}" +
  "input,select{font:inherit;padding:.4rem;max-width:100%;box-sizing:border-box}button{font:inherit;padding:.4rem 1rem;margin:.25rem .5rem .25rem 0}" +
  "form{margin:.5rem 0}form.inline{display:inline}.row{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:flex-end}.row label{margin-top:0}" +
  ".error{border-left:4px solid #b00020;padding:.25rem .75rem;color:#b00020}.note{border-left:4px solid #0b6e2f;padding:.25rem .75rem}" +
  ".secret{word-break:break-all;font-size:1.1rem;display:block;padding:.5rem}.figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(12rem,1fr));gap:.75rem}" +
  ".figure{border:1px solid #ccc;border-radius:4px;padding:.5rem .75rem}.figure strong{display:block;font-size:1.4rem}figure{margin:0}caption{text-align:left;font-weight:600}.chart svg{width:100%;height:auto;max-width:36rem}" +
  ".items{list-style:none;padding:0}.items>li{border:1px solid #ccc;border-radius:4px;padding:.5rem .75rem;margin:.5rem 0}" +
  ".items dl{display:grid;grid-template-columns:max-content 1fr;gap:0 .75rem;margin:.25rem 0}.items dt{font-weight:600}.items dd{margin:0}" +
  ".legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 .8rem;vertical-align:middle}.danger{color:#fff;background:#b00020;border:1px solid #7a0016}"

/** `?account=` on a dashboard link. */
export const accountQuery = (account: Account) => `account=${encodeURIComponent(account.id)}`

export const hidden = (name: string, value: string) =>
  html`<input type="hidden" name="${name}" value="${value}">`

/** The hidden fields every dashboard form carries: the session's CSRF token and the account it acts on. */
export const formFields = (csrf: string, account: Account) =>
  html`${hidden("csrf", csrf)}${hidden("account", account.id)}`

export const errorNote = (message: string | undefined): Html =>
  message === undefined ? html`` : html`<p class="error" role="alert">${message}</p>`

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

/** A plain `GET` form: several accounts are switched without any script. */
const switcher = (baseUrl: string, section: Section, accounts: ReadonlyArray<Account>, current: Account) => {
  if (accounts.length < 2) return html`<p>Account <code>${current.id}</code></p>`
  const path = sections.find((entry) => entry.id === section)?.path ?? "/dashboard"
  return html`<form method="get" action="${baseUrl}${path}" class="row"><div><label for="account-switch">Account</label>
<select id="account-switch" name="account">${accounts.map(
    (account) =>
      html`<option value="${account.id}"${account.id === current.id ? html` selected` : ""}>${account.id} (${account.plan})</option>`
  )}</select></div><button type="submit">Switch</button></form>`
}

export interface Frame {
  readonly baseUrl: string
  readonly email: string
  readonly csrf: string
  readonly accounts: ReadonlyArray<Account>
  readonly account: Account
}

/** A whole dashboard page: who is signed in, the account switcher, the sections, and one `<h1>`. */
export const dashboardPage = (
  frame: Frame,
  section: Section,
  title: string,
  body: Html,
  options: { readonly copy?: boolean } = {}
): string =>
  html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Dashboard</title><style>${{ _tag: "Html", value: style }}</style></head>
<body><header><div>Signed in as <strong>${frame.email}</strong>
<form method="post" action="${frame.baseUrl}/logout" class="inline">${hidden("csrf", frame.csrf)}<button type="submit">Sign out</button></form></div>
${switcher(frame.baseUrl, section, frame.accounts, frame.account)}</header>
<nav aria-label="Dashboard"><ul>${sections.map(
    (entry) =>
      html`<li><a href="${frame.baseUrl}${entry.path}?${accountQuery(frame.account)}"${
        entry.id === section ? html` aria-current="page"` : ""
      }>${entry.label}</a></li>`
  )}<li><a href="${frame.baseUrl}/docs">API reference</a></li></ul></nav>
<main><h1>${title}</h1>
${body}
</main>${options.copy === true ? html`<script>${{ _tag: "Html", value: copyScript }}</script>` : ""}</body></html>`
    .value

/** A dashboard request that could not be done, with what to do next. */
export const failurePage = (frame: Frame, title: string, message: string, next: Html) =>
  dashboardPage(frame, "overview", title, html`<p class="error" role="alert">${message}</p><p>${next}</p>`)
