import { escapeHtml } from "../../../domain/html.ts"
import { labelCells, stylesheet } from "./stylesheet.ts"

export { escapeHtml }

/** Markup that is already safe: only `html` and `inlineCode` make one, so text is escaped by default. */
export interface Html {
  readonly _tag: "Html"
  readonly value: string
}

type Part = string | number | Html | ReadonlyArray<Part>

const trusted = (value: string): Html => ({ _tag: "Html", value })

const render = (part: Part): string =>
  typeof part === "string"
    ? escapeHtml(part)
    : typeof part === "number"
      ? String(part)
      : Array.isArray(part)
        ? part.map(render).join("")
        : (part as Html).value

/** A template whose interpolations are escaped unless they are `Html` already. */
export const html = (strings: TemplateStringsArray, ...parts: ReadonlyArray<Part>): Html =>
  trusted(strings.reduce((out, text, index) => out + render(parts[index - 1] ?? "") + text))

/** Catalogue prose: escaped, with `backticked` spans as `<code>`. */
export const inlineCode = (text: string): Html =>
  trusted(
    text
      .split("`")
      .map((piece, index) => (index % 2 === 1 ? `<code>${escapeHtml(piece)}</code>` : escapeHtml(piece)))
      .join("")
  )

/** The product's name, as every page's header and title say it. */
export const productName = "svc data API"

/** What every page's `<meta name="description">` says unless the page says more. */
const defaultDescription =
  "Metered public data from a professional network, a forum and a microblog for AI agents: JSON over REST and MCP tools, every call quoted in credits and answered with a receipt."

export interface PageChrome {
  /** The page's own summary for search results; a default otherwise. */
  readonly description?: string
  /** The browser holds a sign-in: the header links to the dashboard instead of the sign-in page. */
  readonly signedIn?: boolean
  /** Payments on this page go through the built-in test rail: the header says "Test mode". */
  readonly testMode?: boolean
}

/** The `<head>` every page shares: charset, viewport, title, description and the one stylesheet. */
export const head = (title: string, description: string = defaultDescription): Html =>
  html`<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title><meta name="description" content="${description}"><style>${trusted(stylesheet)}</style>`

/** The "Test mode" badge of the built-in payment rail, where no money moves. */
export const testModeBadge: Html = trusted(
  '<span class="badge" title="Payments here use the built-in test rail: no card, no money moves">Test mode</span>'
)

/**
 * A whole page: the site header (the product's name, the links, "Sign in" or "Dashboard"), one
 * `<h1>`, its body. Links are absolute, from the configured base URL, like every link the API hands
 * out; tables are labelled for phones (`labelCells`).
 */
export const page = (baseUrl: string, title: string, body: Html, chrome: PageChrome = {}): string =>
  labelCells(
    html`<!doctype html>
<html lang="en"><head>${head(`${title} · ${productName}`, chrome.description)}</head>
<body><header class="site"><a class="brand" href="${baseUrl}/">${productName}</a>${
      chrome.testMode === true ? testModeBadge : ""
    }
<nav aria-label="Site"><ul><li><a href="${baseUrl}/docs">API reference</a></li><li><a href="${baseUrl}/docs/errors">Error codes</a></li><li><a href="${baseUrl}/upgrade">Pricing</a></li><li>${
      chrome.signedIn === true
        ? html`<a class="cta" href="${baseUrl}/dashboard">Dashboard</a>`
        : html`<a class="cta" href="${baseUrl}/login">Sign in</a>`
    }</li></ul></nav></header>
<main class="narrow"><h1>${title}</h1>
${body}
</main></body></html>`.value
  )
