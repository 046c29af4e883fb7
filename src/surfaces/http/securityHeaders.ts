import { type IncomingMessage, ServerResponse } from "node:http"

/**
 * The security headers of every HTML answer the service sends, whoever writes it: our pages, the
 * `/docs` page (Scalar) and oidc-provider's own pages, which it writes straight onto the Node
 * response. The Node server is made with `HardenedResponse`, so no HTML can leave without them.
 */

/** What a page may use besides its own inline style; everything else is refused. */
export interface PageSources {
  /** Origins (besides the service) a form on the page may end at (Chromium checks the redirect too). */
  readonly formTargets?: ReadonlyArray<string>
  /** The inline scripts the page runs, as `'sha256-...'` sources. */
  readonly scripts?: ReadonlyArray<string>
  readonly images?: ReadonlyArray<string>
  readonly fonts?: ReadonlyArray<string>
  /**
   * Where the page may send requests: the service itself unless told otherwise. No page runs a
   * script but by its hash, so this admits no request of anyone else's; it lets a tool reading the
   * page fetch the site's own files through it (Lighthouse reads `/robots.txt` so).
   */
  readonly connect?: ReadonlyArray<string>
}

const directive = (name: string, sources: ReadonlyArray<string> | undefined) =>
  sources === undefined || sources.length === 0 ? "" : `; ${name} ${sources.join(" ")}`

/**
 * The Content-Security-Policy of a page: nothing from anywhere by default, its inline style, requests
 * to the service itself, what `sources` names, no `<base>`, forms only to the service, and never
 * inside a frame.
 */
export const contentSecurityPolicy = (sources: PageSources = {}) =>
  `default-src 'none'; style-src 'unsafe-inline'${directive("script-src", sources.scripts)}${directive("img-src", sources.images)}${directive("font-src", sources.fonts)}${directive("connect-src", sources.connect ?? ["'self'"])}; base-uri 'none'; form-action 'self'${(
    sources.formTargets ?? []
  )
    .map((origin) => ` ${origin}`)
    .join("")}; frame-ancestors 'none'`

/** Headers every HTML answer carries; a page that needs more than the default policy sets its own CSP. */
export const htmlSecurityHeaders: Readonly<Record<string, string>> = {
  "content-security-policy": contentSecurityPolicy(),
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  // Only to the service: its addresses may hold a link token, and with `no-referrer` a browser
  // sends `Origin: null` with the pages' own forms, which the forms' origin check refuses.
  "referrer-policy": "same-origin"
}

type OutgoingHeaders = Readonly<Record<string, unknown>> | ReadonlyArray<unknown> | undefined

/** The value of `name` (lower case) among the headers handed to `writeHead`, in either of Node's forms. */
const headerIn = (headers: OutgoingHeaders, name: string): unknown => {
  if (headers === undefined) return undefined
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2)
      if (String(headers[i]).toLowerCase() === name) return headers[i + 1]
    return undefined
  }
  for (const key in headers) if (key.toLowerCase() === name) return (headers as Record<string, unknown>)[key]
  return undefined
}

const isHtml = (contentType: unknown) =>
  typeof contentType === "string" && /^\s*text\/html\b/i.test(contentType)

/**
 * A Node response that adds `htmlSecurityHeaders` to every `text/html` answer when its head is
 * written (explicitly, or implicitly at the first write), keeping any the answer set itself.
 */
export class HardenedResponse<
  Request extends IncomingMessage = IncomingMessage
> extends ServerResponse<Request> {
  override writeHead(statusCode: number, ...rest: Array<any>): this {
    const given: OutgoingHeaders = typeof rest[0] === "object" && rest[0] !== null ? rest[0] : rest[1]
    if (!this.headersSent && isHtml(headerIn(given, "content-type") ?? this.getHeader("content-type"))) {
      for (const [name, value] of Object.entries(htmlSecurityHeaders))
        if (headerIn(given, name) === undefined && !this.hasHeader(name)) this.setHeader(name, value)
    }
    return super.writeHead(statusCode, ...(rest as []))
  }
}
