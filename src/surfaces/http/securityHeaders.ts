import { type IncomingMessage, ServerResponse } from "node:http"
import { htmlSecurityHeaders } from "../../domain/html.ts"

/**
 * The security headers of every HTML answer the service sends, whoever writes it: our pages, the
 * `/docs` page (Scalar) and oidc-provider's own pages, which it writes straight onto the Node
 * response. The Node server is made with `HardenedResponse`, so no HTML can leave without them.
 */

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
