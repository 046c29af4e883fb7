import { type IncomingMessage, type Server, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import type { HttpServerRequest } from "effect/http"
import { type ApiError, InvalidInput, NotFound, PayloadTooLarge } from "../../contract/errors.ts"
import { type ProblemContext, toProblem } from "../../contract/problem.ts"

/**
 * Requests Node's HTTP parser refuses before any route sees them (malformed request lines and
 * headers, oversized heads, methods it does not know, CONNECT) still get a problem document.
 */
interface Refusal {
  readonly status: number
  readonly error: ApiError
}

type ParseError = Error & { readonly code?: string | undefined; readonly reason?: string | undefined }

/** The answer to one of Node's `clientError`s, by its code. */
export const refusalOf = (error: ParseError): Refusal => {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      // The request line and headers exceed Node's 16 KB: the contract's PAYLOAD_TOO_LARGE ("the
      // request exceeded the size limit", send less) with the status the contract ties to it, 413.
      // INVALID_INPUT would send an agent looking for a `param` to fix, and there is none.
      return {
        status: 413,
        error: new PayloadTooLarge({
          message:
            "The request line and headers together exceed 16 KB. Send a shorter URL (fewer or shorter parameters) or smaller headers."
        })
      }
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return {
        status: 413,
        error: new PayloadTooLarge({ message: "The chunk extensions of the request body exceed 16 KB." })
      }
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return {
        status: 408,
        error: new InvalidInput({
          message: "The request did not arrive completely in time. Send the whole request promptly."
        })
      }
    case "HPE_INVALID_METHOD":
      return {
        status: 400,
        error: new InvalidInput({
          message:
            "The request method is not an HTTP method. Data calls are GET; key minting and the MCP endpoint are POST."
        })
      }
    default:
      return {
        status: 400,
        error: new InvalidInput({
          message: `The request is not valid HTTP/1.1 (${error.reason ?? error.message}). Send an ASCII request line with a percent-encoded URL, \`Name: value\` headers and at most one valid Content-Length.`
        })
      }
  }
}

const rawResponse = (refusal: Refusal, context: ProblemContext): string => {
  // The body's `status` repeats the status sent (RFC 9457), also where it is not the code's usual one.
  const body = JSON.stringify({ ...toProblem(refusal.error, context), status: refusal.status })
  return [
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ""}`,
    "Content-Type: application/problem+json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Connection: close",
    "",
    body
  ].join("\r\n")
}

/** A response of ours already started on this connection (Node's own `clientError` default checks the same). */
const responseStarted = (socket: Duplex) =>
  (socket as { readonly _httpMessage?: { readonly headersSent?: boolean } })._httpMessage?.headersSent ===
  true

/** Answers where the connection still allows it, then closes: at once if the client does, or after a grace period. */
const answerAndClose = (socket: Duplex, response: () => string) => {
  if (socket.writableEnded) return
  if (!socket.writable || responseStarted(socket)) {
    socket.destroy()
    return
  }
  socket.end(response())
  const timer = setTimeout(() => socket.destroy(), 2_000)
  timer.unref()
  socket.once("close", () => clearTimeout(timer))
}

/** Node's parse failures and CONNECT as problem documents instead of its bare 400/431 or silence. */
export const answerProtocolErrors = (server: Server, context: ProblemContext): void => {
  server.on("clientError", (error: ParseError, socket: Duplex) => {
    if (error.code === "ECONNRESET" || error.code === "EPIPE") return void socket.destroy()
    answerAndClose(socket, () => rawResponse(refusalOf(error), context))
  })
  // The service is not a proxy: CONNECT is a method it does not serve, which is NOT_FOUND, as on every route.
  server.on("connect", (_request: IncomingMessage, socket: Duplex) =>
    answerAndClose(socket, () =>
      rawResponse(
        {
          status: 404,
          error: new NotFound({
            message:
              "This service is not a proxy and serves no CONNECT. The API is described at /v1/openapi.json."
          })
        },
        context
      )
    )
  )
}

const decodes = (path: string) => {
  try {
    decodeURIComponent(path)
    return true
  } catch {
    return false
  }
}

/**
 * What the parser lets through but no route can serve. HTTP/1.1 requires Host (RFC 9112 §3.2);
 * Node's own check answers an empty 400, so it is turned off on the server and made here. A path
 * whose percent-escapes do not decode (`%ZZ`, broken UTF-8) matches no route, not even the
 * catch-all, and would otherwise surface as an internal error.
 */
export const unroutable = (request: HttpServerRequest.HttpServerRequest): InvalidInput | undefined => {
  const version = (request.source as { readonly httpVersion?: string }).httpVersion
  if (version === "1.1" && request.headers.host === undefined) {
    return new InvalidInput({
      message: "An HTTP/1.1 request needs a Host header. Send `Host: <the service's host name>`.",
      param: "Host"
    })
  }
  const query = request.url.indexOf("?")
  const path = query === -1 ? request.url : request.url.slice(0, query)
  // Only a percent-escape can fail to decode.
  if (path.includes("%") && !decodes(path)) {
    return new InvalidInput({
      message:
        "The URL path has a malformed percent-escape. Encode each reserved or non-ASCII byte of UTF-8 as %XX."
    })
  }
  return undefined
}
