import { type AppConfigShape, links } from "../../config.ts"
import { type ErrorCode, type ErrorSpec, errorCatalog } from "../../contract/errors.ts"
import { freeTierSentence } from "../../domain/plans.ts"
import { html, inlineCode, page } from "./pages/html.ts"

const entries = Object.entries(errorCatalog) as Array<[ErrorCode, ErrorSpec]>

/**
 * `/docs/errors`: one anchor per code, the target of every problem's `doc_url`. The catalogue's
 * prose is rendered with the configured base URL in place of `{base_url}` and its backticked
 * spans as code.
 */
export const errorDocsPage = ({ baseUrl, policy }: Pick<AppConfigShape, "baseUrl" | "policy">): string => {
  const link = links(baseUrl)
  // The catalogue names no numbers an operator can change; this service's are added here.
  const configured: Partial<Record<ErrorCode, string>> = {
    TRIAL_CAP_EXCEEDED: `Here: ${freeTierSentence(policy.freeCreditsPerIpDay)} A search \`limit\` is at most ${policy.trialSearchLimit}.`,
    BUDGET_EXHAUSTED: `Here: ${freeTierSentence(policy.freeCreditsPerIpDay)}`
  }
  const prose = (text: string) => inlineCode(text.replaceAll("{base_url}", baseUrl))
  return page(
    baseUrl,
    "Error codes",
    html`<p>Every error is <code>application/problem+json</code> with <code>code</code>, <code>message</code>,
<code>is_retriable</code> and <code>doc_url</code> (a link to its section below). The MCP tools return the same
content as an error result. A failed call is never charged.</p>
<p>Errors a payment can fix also carry <code>upgrade_url</code> and an <code>offer</code> whose packs are listed at
<a href="${link.upgrade}">${link.upgrade}</a>.</p>
<nav aria-label="Codes"><ul>${entries.map(([code]) => html`<li><a href="#${code}"><code>${code}</code></a></li>`)}</ul></nav>
${entries.map(
  ([code, spec]) => html`<section id="${code}"><h2><code>${code}</code> &middot; HTTP ${spec.status}${
    spec.retriable ? " · retriable" : ""
  }</h2>
<p><strong>${spec.title}.</strong> ${prose(spec.next)}${configured[code] === undefined ? "" : html` ${prose(configured[code])}`}</p></section>
`
)}`
  )
}
