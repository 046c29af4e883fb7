import { type AppConfigShape, links } from "../../../config.ts"
import { responseExamples } from "../../../contract/examples/index.ts"
import { declarations } from "../../../contract/operations/index.ts"
import { getProfile } from "../../../contract/operations/profnet.ts"
import { freeTierSentence } from "../../../domain/plans.ts"
import { count } from "../checkout/format.ts"
import { html, page } from "./html.ts"

/** What each platform serves, in the words of its operations (their ids are the contract's). */
const platforms = [
  ["profnet", "a professional network", "people's profiles, people search, companies, posts"],
  ["forum", "a forum", "search, communities and their posts, users and their posts"],
  ["microblog", "a microblog", "search, profiles, posts and their replies"]
] as const

/**
 * The sample answer: the contract's request sample of `getProfile` as the service answered it
 * (`npm run examples`), the profile's long sections left out.
 */
const sample = (baseUrl: string) => {
  const answer = responseExamples.data.getProfile as {
    readonly kind: string
    readonly data: Record<string, unknown>
    readonly cost: unknown
    readonly receipt: { readonly id: string }
  }
  const { name, headline, location, follower_count } = answer.data
  const shown = { kind: answer.kind, data: { name, headline, location, follower_count }, cost: answer.cost }
  const text = JSON.stringify(shown, null, 2)
    .replace(/\n {2}\},\n {2}"cost"/, `,\n    "...": "about, experience, skills"\n  },\n  "cost"`)
    .replace(/\n\}$/, `,\n  "receipt": { "id": "${answer.receipt.id}", ... }\n}`)
  const { identifier, sections } = getProfile.examples as {
    identifier: string
    sections: ReadonlyArray<string>
  }
  return {
    request: `curl -s -H "Authorization: Bearer $KEY" \\\n  "${baseUrl}/v1/profnet/profiles?identifier=${identifier}&sections=${sections.join(",")}"`,
    text
  }
}

/** `/`: for an agent's developer who opened the base URL: the key, what it reaches, an answer, the price. */
export const landingPage = (
  config: Pick<AppConfigShape, "baseUrl" | "policy">,
  signedIn: boolean
): string => {
  const link = links(config.baseUrl)
  const example = sample(config.baseUrl)
  const pack = config.policy.packs.find((candidate) => candidate.credits !== undefined)
  return page(
    config.baseUrl,
    "Data API for AI agents",
    html`<p class="lead">Public data from three platforms as JSON over REST (<code>/v1</code>) and as MCP tools
(<code>${link.mcp}</code>). Every call is quoted in credits before it runs and answered with a receipt.</p>
<ul class="platforms">${platforms.map(
      ([id, what, serves]) => html`<li><strong>${id}</strong>, ${what}: ${serves}</li>`
    )}</ul>
<h2 id="mint">Mint a key: one call, no signup</h2>
<pre class="primary"><code>curl -s -X POST ${config.baseUrl}/v1/keys/mint</code></pre>
<p>The answer holds the key (shown once: store it) and the lines to set it up for REST and MCP. Send it on every call
as <code>Authorization: Bearer &lt;key&gt;</code>; an MCP client connects to <code>${link.mcp}</code> with the same header.</p>
<p><a class="button" href="${link.docs}">API reference</a> ${
      signedIn
        ? html`<a class="button secondary" href="${config.baseUrl}/dashboard">Your dashboard</a>`
        : html`<a class="button secondary" href="${link.login}">Sign in</a>`
    }</p>
<h2>A call and its answer</h2>
<pre><code>${example.request}</code></pre>
<pre><code>${example.text}</code></pre>
<h2 id="price">Price</h2>
<p>Each call costs a few credits, quoted before it runs (set <code>max_credits</code> to cap it); a failed call costs nothing.
${freeTierSentence(config.policy.freeCreditsPerIpDay)}${
  pack === undefined
    ? ""
    : html` After that, <a href="${link.upgrade}">credit packs</a> start at ${count(pack.credits ?? 0)} credits.`
}</p>
${platforms.map(
  ([id, what]) => html`<h3>Credits per call on ${id} (${what})</h3>
<ul>${declarations
    .filter((operation) => operation.platform === id)
    .map((operation) => html`<li><code>${operation.id}</code>: ${operation.price.summary}</li>`)}</ul>`
)}
<h2>More</h2>
<ul>
<li><a href="${link.openapi}">OpenAPI 3.1 document</a></li>
<li><a href="${config.baseUrl}/docs/errors">Error codes</a> and what to do about each</li>
<li><a href="${link.claim}">Claiming a trial account</a> with your email, to keep its keys and see them on the dashboard</li>
<li>${
      signedIn
        ? html`You are signed in: <a href="${config.baseUrl}/dashboard">the dashboard</a> shows your keys, usage, receipts and billing.`
        : html`<a href="${link.login}">Sign in with your email</a> (a code by email, no password) for the dashboard: keys, usage, receipts and billing.`
    }</li>
</ul>`,
    { signedIn }
  )
}
