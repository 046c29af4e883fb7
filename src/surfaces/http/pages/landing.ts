import { type AppConfigShape, links } from "../../../config.ts"
import { freeTierSentence } from "../../../domain/plans.ts"
import { html, page } from "./html.ts"

/** `/`: what the service is and where everything is, for a person who opened the base URL. */
export const landingPage = (
  config: Pick<AppConfigShape, "baseUrl" | "policy">,
  signedIn: boolean
): string => {
  const link = links(config.baseUrl)
  return page(
    config.baseUrl,
    "Data API for AI agents",
    html`<p class="lead">Public data from a professional network, a forum and a microblog, as JSON over REST (<code>/v1</code>)
and as MCP tools. Every call is quoted in credits before it runs and answered with a receipt.</p>
<p>${
      signedIn
        ? html`<a class="button" href="${config.baseUrl}/dashboard">Open your dashboard</a>`
        : html`<a class="button" href="${link.login}">Sign in</a> <a class="button secondary" href="${config.baseUrl}/dashboard">Dashboard</a>`
    }</p>
<h2>Start</h2>
<ol>
<li>Mint a free trial key (no signup, no body):
<pre><code>curl -s -X POST ${config.baseUrl}/v1/keys/mint</code></pre>
The key is shown once; store it. ${freeTierSentence(config.policy.freeCreditsPerIpDay)}</li>
<li>Send it on every call: <code>Authorization: Bearer &lt;key&gt;</code>. <code>GET ${config.baseUrl}/v1/usage</code> shows what the key can do.</li>
<li>Or connect an MCP client to <code>${link.mcp}</code> with the same header.</li>
</ol>
<h2>Documentation</h2>
<ul>
<li><a href="${link.docs}">API reference</a> (every operation, its parameters and price)</li>
<li><a href="${link.openapi}">OpenAPI 3.1 document</a></li>
<li><a href="${config.baseUrl}/docs/errors">Error codes</a> and what to do about each</li>
<li><a href="${link.upgrade}">Credit packs</a> and how to get them</li>
<li><a href="${link.claim}">Claiming a trial account</a></li>
</ul>
<h2>Your account</h2>
<p>${
      signedIn
        ? html`You are signed in: <a href="${config.baseUrl}/dashboard">the dashboard</a> shows your keys, usage, receipts and billing.`
        : html`<a href="${link.login}">Sign in with your email</a> to see <a href="${config.baseUrl}/dashboard">the dashboard</a>: keys, usage, receipts and billing. No password: a code by email.`
    }</p>`,
    { signedIn }
  )
}
