import { type AppConfigShape, links } from "../../../config.ts"
import { type Html, html, page } from "./html.ts"

type Config = Pick<AppConfigShape, "baseUrl" | "policy">

/** Where a browser sign-in goes once it is done. */
export type Continuation =
  | { readonly _tag: "Home" }
  /** The loopback callback of a command-line client (RFC 8252). */
  | { readonly _tag: "Redirect"; readonly redirectUri: string; readonly state: string }
  /** Back to `/activate`, keeping the device's user code. */
  | { readonly _tag: "Activate"; readonly userCode: string }
  /** Back to `/dashboard`, where a signed-out visit was sent from. */
  | { readonly _tag: "Dashboard" }

export const home: Continuation = { _tag: "Home" }

export const hidden = (name: string, value: string) =>
  html`<input type="hidden" name="${name}" value="${value}">`

/** The hidden fields that carry a continuation from form to form. */
export const continuationFields = (continuation: Continuation): Html =>
  continuation._tag === "Redirect"
    ? html`${hidden("redirect_uri", continuation.redirectUri)}${hidden("state", continuation.state)}`
    : continuation._tag === "Activate"
      ? html`${hidden("then", "activate")}${hidden("user_code", continuation.userCode)}`
      : continuation._tag === "Dashboard"
        ? hidden("then", "dashboard")
        : html``

export const errorNote = (message: string | undefined): Html =>
  message === undefined ? html`` : html`<p class="error" role="alert">${message}</p>`

const emailField = (email: string) =>
  html`<label for="email">Email address</label>
<input id="email" name="email" type="email" autocomplete="email" inputmode="email" required maxlength="254" value="${email}">`

/** A person in the middle of a sign-in: what the code form needs to carry. */
export interface CodeStep {
  readonly email: string
  readonly continuation: Continuation
  /** The account a claim's key names, when the sign-in started at `/claim`. */
  readonly claiming?: string | undefined
  /**
   * The claim's key, carried to the code step: a claim needs the key that started it at verify too,
   * so a code typed anywhere else (a victim's own sign-in) claims nothing.
   */
  readonly key?: string | undefined
  readonly error?: string | undefined
}

const codeForm = (config: Config, step: CodeStep) =>
  html`<p>We sent a 6-digit code to <strong>${step.email}</strong> (if the address can receive mail). It works for
10 minutes; the email also has a link that signs you in.</p>
${errorNote(step.error)}
<form method="post" action="${config.baseUrl}/login/code">
${hidden("email", step.email)}${step.claiming === undefined ? "" : hidden("claiming", step.claiming)}${step.key === undefined ? "" : hidden("key", step.key)}${continuationFields(step.continuation)}
<label for="code">6-digit code</label>
<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
<button type="submit">Sign in</button>
</form>
<p><a href="${config.baseUrl}/login">Start again with another address</a></p>`

export const codePage = (config: Config, step: CodeStep) =>
  page(
    config.baseUrl,
    step.claiming === undefined ? "Enter your code" : "Claim: enter your code",
    codeForm(config, step)
  )

const continuationIntro = (continuation: Continuation) =>
  continuation._tag === "Redirect"
    ? html`<p>A command-line client on this computer asked to sign in. After you sign in, this browser goes back to it
at <code>${new URL(continuation.redirectUri).host}</code>.</p>`
    : continuation._tag === "Activate"
      ? html`<p>Sign in first to approve the command-line client's code${continuation.userCode === "" ? "" : html` <code>${continuation.userCode}</code>`}.</p>`
      : html``

/** `/login`: the email step. */
export const loginPage = (
  config: Config,
  options: { continuation: Continuation; email?: string; error?: string | undefined }
) =>
  page(
    config.baseUrl,
    "Sign in",
    html`${continuationIntro(options.continuation)}
<p>Sign in with your email address: we send you a 6-digit code. There is no password. A new address gets a trial
account of its own; to attach the trial key you already use, <a href="${links(config.baseUrl).claim}">claim it</a> instead.</p>
${errorNote(options.error)}
<form method="post" action="${config.baseUrl}/login">
${continuationFields(options.continuation)}
${emailField(options.email ?? "")}
<button type="submit">Send me a code</button>
</form>`
  )

/**
 * `/login?token=...`: the emailed link asks before it signs in, so a mail scanner's prefetch signs no
 * one in. It names the address it signs in, and the sign-in it would replace in this browser: a link
 * someone else sent (their own account's) must not quietly swap the person's session for theirs.
 */
export const linkConfirmPage = (
  config: Config,
  options: {
    readonly token: string
    readonly email: string
    /** The address this browser is signed in as now, if any. */
    readonly current: string | undefined
    /** The sign-in was started with a trial key, to claim its account. */
    readonly claiming: boolean
  }
) =>
  page(
    config.baseUrl,
    "Sign in with this link",
    html`<p>This link signs you in as <strong>${options.email}</strong> in this browser. It works once.</p>
${
  options.current === undefined
    ? ""
    : options.current === options.email
      ? html`<p role="status">This browser is already signed in as <strong>${options.current}</strong>; continuing starts a new sign-in for the same address.</p>`
      : html`<p class="error" role="alert">This browser is signed in as <strong>${options.current}</strong>. Continuing signs
<strong>${options.current}</strong> out here and signs in <strong>${options.email}</strong> instead. Continue only if you asked
for a sign-in link for <strong>${options.email}</strong> yourself: a link someone else sends you signs you in to their account.</p>`
}
<form method="post" action="${config.baseUrl}/login/link">${hidden("token", options.token)}
${
  options.claiming
    ? html`<p>This sign-in was started to claim a trial account. To claim it, paste the trial key it was started with;
without the key you are only signed in, and nothing is claimed.</p>
<label for="key">Trial key (optional)</label>
<input id="key" name="key" type="password" autocomplete="off" spellcheck="false" maxlength="200" placeholder="svc_trial_...">`
    : ""
}
<button type="submit">Sign in as ${options.email}</button></form>
<p><a href="${config.baseUrl}/">Cancel</a></p>`
  )

/** An account as the signed-in page lists it. */
export interface AccountLine {
  readonly id: string
  readonly plan: string
  readonly balance: number
  readonly grant: number
}

const count = (n: number) => n.toLocaleString("en-US")

const accountTable = (accounts: ReadonlyArray<AccountLine>) =>
  accounts.length === 0
    ? html`<p>No account yet.</p>`
    : html`<div class="wide"><table><caption>Your accounts</caption>
<thead><tr><th scope="col">Account</th><th scope="col">Plan</th><th scope="col">Credits</th><th scope="col">Grant</th></tr></thead>
<tbody>${accounts.map(
        (account) =>
          html`<tr><th scope="row"><code>${account.id}</code></th><td>${account.plan}</td><td>${count(account.balance)}</td><td>${count(account.grant)}</td></tr>`
      )}</tbody></table></div>`

export const signOutForm = (config: Config, csrf: string) =>
  html`<form method="post" action="${config.baseUrl}/logout">${hidden("csrf", csrf)}<button type="submit" class="secondary">Sign out</button></form>`

/** What a claim's sign-in did, in words. */
const claimOutcome = (
  config: Config,
  claiming: string | undefined,
  outcome: {
    readonly claimed: string | null
    readonly grant: number
    readonly accounts: ReadonlyArray<AccountLine>
  }
) => {
  if (claiming === undefined) return html``
  const grant =
    outcome.grant > 0
      ? html`It received the one-time grant of ${count(outcome.grant)} credits, spent after the free budget.`
      : ""
  if (outcome.claimed === claiming)
    return html`<p role="status"><strong>Account <code>${claiming}</code> is now claimed by your email.</strong>
${grant} The same key keeps working; if you lose it, <a href="${config.baseUrl}/recover">recover the account</a> by email.</p>`
  return outcome.accounts.some((account) => account.id === claiming)
    ? html`<p role="status">Account <code>${claiming}</code> was already claimed by your email. ${grant}</p>`
    : html`<p role="status">Account <code>${claiming}</code> was not claimed: another email owns it, or the key that
started the claim was not the one given. You are signed in with the accounts your own email governs.</p>`
}

/** The signed-in page: who, which accounts, and the way out. */
export const signedInPage = (
  config: Config,
  options: {
    readonly email: string
    readonly accounts: ReadonlyArray<AccountLine>
    readonly csrf: string
    readonly claiming?: string | undefined
    readonly claimed?: string | null
    readonly grant?: number
  }
) =>
  page(
    config.baseUrl,
    "Signed in",
    html`<p>You are signed in as <strong>${options.email}</strong> in this browser (for 90 days, or until you sign out).</p>
${claimOutcome(config, options.claiming, { claimed: options.claimed ?? null, grant: options.grant ?? 0, accounts: options.accounts })}
${accountTable(options.accounts)}
<ul>
<li><a href="${config.baseUrl}/dashboard">Your dashboard</a>: keys, usage, receipts, alert, billing</li>
<li><a href="${links(config.baseUrl).activate}">Approve a command-line client</a> (device code)</li>
<li><a href="${links(config.baseUrl).upgrade}">Credit packs</a></li>
<li><a href="${links(config.baseUrl).docs}">API reference</a>: management routes take a management token, which
<code>POST /v1/auth/email/start</code> and <code>/v1/auth/email/verify</code> give to a program</li>
</ul>
${signOutForm(config, options.csrf)}`
  )

/** Already signed in by cookie: one button sends the loopback client its code. */
export const authorizePage = (
  config: Config,
  options: {
    readonly email: string
    readonly redirectUri: string
    readonly state: string
    readonly csrf: string
  }
) =>
  page(
    config.baseUrl,
    "Sign in a command-line client",
    html`<p>A program on this computer (<code>${new URL(options.redirectUri).host}</code>) asks to sign in as
<strong>${options.email}</strong>. Continue only if you just started it.</p>
<form method="post" action="${config.baseUrl}/login/authorize">${hidden("csrf", options.csrf)}${hidden("redirect_uri", options.redirectUri)}${hidden("state", options.state)}
<button type="submit">Continue as ${options.email}</button></form>
<p>Not you? Sign out, then sign in with your own address.</p>
${signOutForm(config, options.csrf)}`
  )

export const refusedRedirectPage = (config: Config) =>
  page(
    config.baseUrl,
    "This sign-in address is refused",
    html`<p class="error" role="alert">The <code>redirect_uri</code> of this link is not a loopback address. A command-line
client may only ask to come back to <code>http://127.0.0.1:PORT/...</code>, <code>http://[::1]:PORT/...</code> or
<code>http://localhost:PORT/...</code> on your own computer, so nothing was signed in and nothing will be sent elsewhere.</p>
<p><a href="${links(config.baseUrl).login}">Sign in here instead</a></p>`
  )

export const signedOutPage = (config: Config) =>
  page(
    config.baseUrl,
    "Signed out",
    html`<p>You are signed out in this browser; its management token is revoked.</p>
<p><a href="${links(config.baseUrl).login}">Sign in again</a></p>`
  )

/** A page that only says what went wrong, with the way on. */
export const problemPage = (config: Config, title: string, message: string) =>
  page(
    config.baseUrl,
    title,
    html`${errorNote(message)}<p><a href="${links(config.baseUrl).login}">Sign in</a> · <a href="${config.baseUrl}/">Home</a></p>`
  )

/** `/claim`: what claiming does and the form that starts it. */
export const claimPage = (
  config: Config,
  options: {
    readonly account?: string | undefined
    readonly email?: string
    readonly error?: string | undefined
  }
) => {
  const link = links(config.baseUrl)
  const account = options.account
  return page(
    config.baseUrl,
    "Claim a trial account",
    html`${account === undefined ? "" : html`<p>For account <code>${account}</code>.</p>`}
<p>Claiming attaches the trial account of your key to your email address. You keep the same key and balance, and you get:</p>
<ul>
<li>a one-time grant of 10,000 credits, spent after the free budget;</li>
<li>recovery: if the key is lost, a link sent to your email gives the account a new key;</li>
<li>sign-in by email, to manage keys and approve command-line clients.</li>
</ul>
<p>An unclaimed trial key keeps working and never expires; claiming is optional. For paid credits, see
<a href="${link.upgrade}${account === undefined ? "" : `?account=${encodeURIComponent(account)}`}">the credit packs</a>.</p>
${errorNote(options.error)}
<form method="post" action="${link.claim}">
<label for="key">Your trial key</label>
<input id="key" name="key" type="password" autocomplete="off" spellcheck="false" required maxlength="200" placeholder="svc_trial_...">
${emailField(options.email ?? "")}
<button type="submit">Send me a code</button>
</form>
<p>We email a 6-digit code; entering it claims the account.</p>`
  )
}
