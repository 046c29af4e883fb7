import type { Account } from "../../../domain/accounts.ts"
import type { ConsentRequest } from "../../../oauth/OAuthServer.ts"
import { html, page } from "../pages/html.ts"
import { errorNote, hidden } from "../pages/signIn.ts"

/**
 * The pages of an MCP client's sign-in (`/login/{uid}`): the emailed code, then the consent that
 * names the client, where the browser goes back to, and the account it will spend from.
 */

const intro = (request: ConsentRequest) =>
  html`<p><strong>${request.clientName}</strong> asks to use this service's tools for you. It sends you back to
<code>${request.redirectHost}</code> afterwards.</p>`

export const emailPage = (baseUrl: string, uid: string, request: ConsentRequest, error?: string) =>
  page(
    baseUrl,
    "Sign in to connect an app",
    html`${intro(request)}
<p>Sign in with your email address: we send you a 6-digit code. There is no password. A new address gets an account
of its own, with the one-time grant of free credits when you connect its first app.</p>
${errorNote(error)}
<form method="post" action="${baseUrl}/login/${uid}/email">
<label for="email">Email address</label>
<input id="email" name="email" type="email" autocomplete="email" inputmode="email" required maxlength="254">
<button type="submit">Email me a code</button>
</form>`
  )

export const codePage = (
  baseUrl: string,
  uid: string,
  request: ConsentRequest,
  email: string,
  error?: string
) =>
  page(
    baseUrl,
    "Enter your code",
    html`${intro(request)}
<p>We sent a 6-digit code to <strong>${email}</strong> (if the address can receive mail). It works for 10 minutes.</p>
${errorNote(error)}
<form method="post" action="${baseUrl}/login/${uid}/code">
${hidden("email", email)}
<label for="code">6-digit code</label>
<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
<button type="submit">Sign in</button>
</form>
<p><a href="${baseUrl}/login/${uid}?another=1">Use another email address</a></p>`
  )

const accountChoice = (accounts: ReadonlyArray<Account>) =>
  accounts.length === 1
    ? html`<p>It will spend credits from account <code>${accounts[0]!.id}</code>.</p>${hidden("account_id", accounts[0]!.id)}`
    : html`<fieldset><legend>Account it will spend from</legend>${accounts.map(
        (account, index) =>
          html`<label><input type="radio" name="account_id" value="${account.id}"${index === 0 ? html` checked` : ""}> <code>${account.id}</code> (${account.plan}, ${account.balanceCredits + account.grantCredits} credits)</label>`
      )}</fieldset>`

export const consentPage = (
  baseUrl: string,
  uid: string,
  request: ConsentRequest,
  input: { readonly email: string; readonly accounts: ReadonlyArray<Account>; readonly csrf: string }
) =>
  page(
    baseUrl,
    `Connect ${request.clientName}?`,
    html`${intro(request)}
<p>Signed in as <strong>${input.email}</strong>.
${request.resources.length === 0 ? "" : html`It asks for ${request.resources.map((resource, index) => html`${index === 0 ? "" : ", "}<code>${resource}</code>`)}.`}</p>
<form method="post" action="${baseUrl}/login/${uid}/consent">
${hidden("csrf", input.csrf)}
${accountChoice(input.accounts)}
<p>Each call it makes is charged like a call with a key, and its receipts name the app. You can disconnect it at
any time on the dashboard's Connected apps page; it stops at once.</p>
<button type="submit" name="decision" value="allow">Connect</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
<p><a href="${baseUrl}/login/${uid}?another=1">Use another email address</a></p>`
  )

export const noAccountPage = (baseUrl: string, email: string) =>
  page(
    baseUrl,
    "No active account",
    html`<p>The accounts of <strong>${email}</strong> are suspended, so no app can spend from them.</p>`
  )

export const expiredPage = (baseUrl: string) =>
  page(
    baseUrl,
    "This sign-in has ended",
    html`<p>This app sign-in expired or was finished already (or was opened in another browser). Start again from the
app: it opens a new sign-in page.</p>`
  )

export const tooManySignInsPage = (
  baseUrl: string,
  input: { readonly message: string; readonly retryAfterSeconds: number }
) =>
  page(
    baseUrl,
    "Too many app sign-ins",
    html`<p>${input.message} Wait ${Math.max(1, Math.ceil(input.retryAfterSeconds / 60))} minutes, then start again from the app.</p>`
  )
