import { type AppConfigShape, links } from "../../../config.ts"
import { html, page } from "./html.ts"
import { errorNote, hidden, signOutForm } from "./signIn.ts"

type Config = Pick<AppConfigShape, "baseUrl" | "policy">

/** `/activate`, signed in: the user code a command-line client shows, approved or denied here. */
export const activatePage = (
  config: Config,
  options: {
    readonly email: string
    readonly userCode: string
    readonly csrf: string
    readonly error?: string | undefined
  }
) =>
  page(
    config.baseUrl,
    "Approve a command-line client",
    html`<p>Signed in as <strong>${options.email}</strong>. A command-line client that runs <code>login</code> shows a code
of 8 letters, like <code>BCDF-GHJK</code>. Approve it only if you started that client yourself: it then acts as you.</p>
${errorNote(options.error)}
<form method="post" action="${links(config.baseUrl).activate}">
${hidden("csrf", options.csrf)}
<label for="user_code">Code shown by the client</label>
<input id="user_code" name="user_code" autocomplete="off" autocapitalize="characters" spellcheck="false" required maxlength="20" value="${options.userCode}">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>
${signOutForm(config, options.csrf)}`,
    // Signed in: the header leads to the dashboard, not to a sign-in.
    { signedIn: true }
  )

export const activatedPage = (config: Config, userCode: string, approved: boolean) =>
  page(
    config.baseUrl,
    approved ? "Client approved" : "Client denied",
    html`<p role="status">${
      approved
        ? html`The client showing <code>${userCode}</code> is signed in: go back to your terminal, it continues by itself.`
        : html`The client showing <code>${userCode}</code> was refused; it stops asking.`
    }</p>
<p><a href="${links(config.baseUrl).activate}">Approve another code</a> · <a href="${links(config.baseUrl).login}">Your accounts</a></p>`
  )

/** `/recover` without a token: the email form, and after it the same answer for every address. */
export const recoverPage = (
  config: Config,
  options: { readonly email?: string; readonly error?: string | undefined; readonly sent?: boolean }
) =>
  page(
    config.baseUrl,
    "Recover an account",
    options.sent === true
      ? html`<p role="status">If this email owns a claimed account, a recovery link is on its way. It works once, for one hour,
and gives the account a new key (every other key of the account stops working).</p>
<p>No mail? Check the address, or wait a little: only claimed accounts can be recovered.</p>`
      : html`<p>Lost the key of a claimed account? Enter the email that claimed it: we send a link that gives the account
a new key. Balance, plan and receipts stay. An unclaimed trial account cannot be recovered.</p>
${errorNote(options.error)}
<form method="post" action="${config.baseUrl}/recover">
<label for="email">Email address</label>
<input id="email" name="email" type="email" autocomplete="email" inputmode="email" required maxlength="254" value="${options.email ?? ""}">
<button type="submit">Send me a recovery link</button>
</form>`
  )

/** `/recover?token=...`: asks before it re-keys, so a mail scanner's prefetch changes nothing. */
export const rekeyConfirmPage = (config: Config, token: string, accountId: string) =>
  page(
    config.baseUrl,
    "Give the account a new key",
    html`<p>This link recovers account <code>${accountId}</code>. The button creates a new key and revokes every other key
of the account at once; programs using an old key stop working until they get the new one.</p>
<form method="post" action="${config.baseUrl}/recover/rekey">${hidden("token", token)}<button type="submit">Create the new key</button></form>`
  )

/** The new key, shown this once. */
export const newKeyPage = (
  config: Config,
  issued: { readonly account_id: string; readonly key: string; readonly revoked: number }
) =>
  page(
    config.baseUrl,
    "Your new key",
    html`<p role="alert"><strong>Store this key now: it is shown only once.</strong> This page cannot show it again, and
the service keeps only a hash of it.</p>
<p class="secret"><code id="new-key">${issued.key}</code></p>
<p>Account <code>${issued.account_id}</code>; ${issued.revoked} old ${issued.revoked === 1 ? "key was" : "keys were"} revoked.
Send the new key as <code>Authorization: Bearer &lt;key&gt;</code>.</p>`
  )
