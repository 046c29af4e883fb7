import { type AppConfigShape, links } from "../../../config.ts"
import { html, page } from "./html.ts"

type Config = Pick<AppConfigShape, "baseUrl" | "policy">

/**
 * `/claim`, where usage's `claim_url` leads. Claiming by email is not built yet, so the page says
 * what a trial account can do today and nothing more.
 */
export const claimPage = (config: Config, account: string | undefined) => {
  const link = links(config.baseUrl)
  return page(
    config.baseUrl,
    "Claim a trial account",
    html`${account === undefined ? "" : html`<p>For account <code>${account}</code>.</p>`}
<p>Claiming an account with an email address is not available yet. Nothing is lost by waiting:
an unclaimed trial key keeps working and never expires.</p>
<h2>What you can do now</h2>
<ol>
<li>Keep your key safe, for example in an environment variable (<code>export SVC_API_KEY=...</code>). It was shown
once, and an unclaimed account cannot be recovered, so a lost key means minting a new one.</li>
<li>Note your account id (<code>account_id</code>); <code>GET ${config.baseUrl}/v1/usage</code> with your key shows it,
with your plan and today's free budget.</li>
<li>Use the free tier: ${config.policy.freeCreditsPerIpDay} credits per IP per UTC day, cached data, first pages only.</li>
<li>For more, see <a href="${link.upgrade}${account === undefined ? "" : `?account=${encodeURIComponent(account)}`}">the credit packs</a>: the operator credits your existing account.</li>
</ol>`
  )
}

/** `/login` and `/activate` (the links `login_url` and `activate_url` name): sign-in is not built yet. */
export const signInPage = (config: Config, title: string) => {
  const link = links(config.baseUrl)
  return page(
    config.baseUrl,
    title,
    html`<p>Signing in (by emailed code, or by approving a command-line client's device code here) is not
available yet, and there are no management tokens yet. Everything the service does today works with a spend key.</p>
<ul>
<li>Mint a free trial key: <code>curl -s -X POST ${config.baseUrl}/v1/keys/mint</code></li>
<li>Get more credits on the key you have: <a href="${link.upgrade}">credit packs</a></li>
<li>Everything else: <a href="${link.docs}">the API reference</a></li>
</ul>`
  )
}
