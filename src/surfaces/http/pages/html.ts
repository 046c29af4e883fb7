import { escapeHtml } from "../../../domain/html.ts"

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

const style =
  "body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#1a1a1a;overflow-wrap:break-word}" +
  "code{background:#f0f0f0;padding:0 .2rem;border-radius:3px}pre{background:#f0f0f0;padding:.75rem;overflow-x:auto}" +
  "table{border-collapse:collapse;display:block;max-width:100%;overflow-x:auto}th,td{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}" +
  "section{border-top:1px solid #ddd;padding:.5rem 0}nav a{margin-right:1rem}a{color:#0645ad}" +
  "label{display:block;margin:.75rem 0 .25rem;font-weight:600}input{font:inherit;padding:.4rem;width:100%;max-width:24rem;box-sizing:border-box}" +
  "button{font:inherit;padding:.45rem 1.1rem;margin:.75rem .5rem .25rem 0}form{margin:1rem 0}.wide{overflow-x:auto}" +
  ".error{border-left:4px solid #b00020;padding:.25rem .75rem;color:#b00020}.secret{word-break:break-all;font-size:1.1rem}"

/**
 * A whole page: one `<h1>` and the same small navigation everywhere. Links are absolute, from the
 * configured base URL, like every link the API hands out.
 */
export const page = (baseUrl: string, title: string, body: Html): string =>
  html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title><style>${trusted(style)}</style></head>
<body><nav aria-label="Site"><a href="${baseUrl}/">Home</a><a href="${baseUrl}/docs">API reference</a><a href="${baseUrl}/docs/errors">Error codes</a><a href="${baseUrl}/upgrade">Credits</a></nav>
<main><h1>${title}</h1>
${body}
</main></body></html>`.value
