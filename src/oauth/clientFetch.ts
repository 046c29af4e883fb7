import type { LookupAddress } from "node:dns"
import { lookup } from "node:dns/promises"
import type { IncomingHttpHeaders } from "node:http"
import { request as httpRequest } from "node:http"
import { request } from "node:https"
import type { LookupFunction } from "node:net"
import { Effect } from "effect"
import { isPublicAddress } from "../domain/addresses.ts"

/**
 * Every request the service makes to a URL someone else named: the authorization server's to a
 * client's documents (its Client ID Metadata Document, any `jwks_uri` or `sector_identifier_uri`:
 * oidc-provider's `fetch`) and every webhook delivery. The host is resolved first and every address
 * it resolves to must be public (`isPublicAddress`), before any connection; the connection then goes
 * to the address that was checked (no second DNS answer), over https only, without following
 * redirects, within a deadline and a body size.
 */

export interface ClientFetchOptions {
  /** `OAUTH_ALLOW_PRIVATE_CLIENT_URLS`: tests serve documents from loopback; never in production. */
  readonly allowPrivate: boolean
  readonly timeoutMs: number
  readonly maxBytes: number
  /** The host's addresses; the system resolver unless a test gives its own. */
  readonly resolve?: (hostname: string) => Promise<ReadonlyArray<LookupAddress>>
}

/** Why a fetch did not happen or was cut short; the library reports it as `invalid_client`. */
export class ClientFetchError extends Error {
  override readonly name = "ClientFetchError"
}

const systemResolve = (hostname: string) => lookup(hostname, { all: true, verbatim: true })

/**
 * Node's `lookup` for one connection: the addresses already checked, never a second DNS answer
 * (Node tries them in turn when it asks for all of them, as it does by default).
 */
const pinnedLookup =
  (checked: ReadonlyArray<LookupAddress>): LookupFunction =>
  (_hostname, options, callback) => {
    if (options.all === true) callback(null, [...checked])
    else callback(null, checked[0]!.address, checked[0]!.family)
  }

const headersOf = (incoming: IncomingHttpHeaders) => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined) continue
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item)
  }
  return headers
}

/** Statuses whose `Response` may have no body. */
const bodiless = new Set([101, 103, 204, 205, 304])

/** One request the service makes to a URL someone named. */
export interface OutboundRequest {
  readonly method: "GET" | "POST"
  readonly headers: Record<string, string>
  readonly body?: string | undefined
}

/** The answer, read up to the cap. */
export interface OutboundAnswer {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
  /** The answer was longer than the cap and was cut there (`overflow: "truncate"`). */
  readonly truncated: boolean
}

export interface OutboundOptions extends ClientFetchOptions {
  /** A longer answer fails the request (a document to use), or is cut at the cap (an answer only recorded). */
  readonly overflow?: "fail" | "truncate"
  /** `http://` too (with `allowPrivate` only: a self-hosted network); https only otherwise. */
  readonly allowHttp?: boolean
  /** The TCP connection, at most (within `timeoutMs`): an address that never answers costs this. */
  readonly connectTimeoutMs?: number
}

/** One request to `url`, connected to one of the `checked` addresses, the answer read up to `maxBytes`. */
const pinnedExchange = (
  url: URL,
  checked: ReadonlyArray<LookupAddress>,
  outbound: OutboundRequest,
  options: OutboundOptions,
  signal: AbortSignal
): Promise<OutboundAnswer> =>
  new Promise((resolve, reject) => {
    const { maxBytes } = options
    const tooLarge = () => new ClientFetchError(`${url.href} answered more than ${maxBytes} bytes`)
    const send = url.protocol === "http:" ? httpRequest : request
    const outgoing = send(
      url,
      {
        method: outbound.method,
        headers: outbound.headers,
        lookup: pinnedLookup(checked),
        // No pooled connection: each request connects to the address it checked.
        agent: false,
        signal
      },
      (answer) => {
        const status = answer.statusCode ?? 502
        const chunks: Array<Buffer> = []
        let size = 0
        const finish = (truncated: boolean) =>
          resolve({
            status,
            headers: answer.headers,
            body: Buffer.concat(chunks).subarray(0, maxBytes),
            truncated
          })
        const over = () => {
          outgoing.destroy()
          if (options.overflow === "truncate") finish(true)
          else reject(tooLarge())
        }
        if (Number(answer.headers["content-length"] ?? 0) > maxBytes && options.overflow !== "truncate")
          return over()
        answer.on("data", (chunk: Buffer) => {
          size += chunk.length
          chunks.push(chunk)
          if (size > maxBytes) over()
        })
        answer.on("error", reject)
        answer.on("end", () => finish(false))
      }
    )
    const connectLimit = options.connectTimeoutMs
    if (connectLimit !== undefined)
      outgoing.on("socket", (socket) => {
        if (!socket.connecting) return
        const timer = setTimeout(
          () =>
            outgoing.destroy(
              new ClientFetchError(`${url.href} did not accept a connection within ${connectLimit} ms`)
            ),
          connectLimit
        )
        socket.once("connect", () => clearTimeout(timer))
        socket.once("close", () => clearTimeout(timer))
      })
    outgoing.on("error", reject)
    outgoing.end(outbound.body)
  })

/**
 * The host of `url` resolved, every address it resolves to public (`isPublicAddress`) unless
 * `allowPrivate`: what a request may connect to. Checked before any connection, at every request
 * (a DNS answer can change).
 */
export const checkedAddresses = (url: URL, options: Pick<OutboundOptions, "allowPrivate" | "resolve">) =>
  Effect.gen(function* () {
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1")
    const resolveHost = options.resolve ?? systemResolve
    const addresses = yield* Effect.tryPromise({
      try: () => resolveHost(host),
      catch: () => new ClientFetchError(`${host} does not resolve`)
    })
    if (addresses.length === 0) return yield* Effect.fail(new ClientFetchError(`${host} has no address`))
    const refused = addresses.find((entry) => !isPublicAddress(entry.address))
    if (refused !== undefined && !options.allowPrivate)
      return yield* Effect.fail(
        new ClientFetchError(`${host} resolves to ${refused.address}, which is not a public address`)
      )
    return addresses
  })

/**
 * One request to a URL someone named (a client's document, a webhook endpoint): https only (or
 * http where allowed), the host resolved and checked first (`checkedAddresses`), the connection
 * to a checked address (no second DNS answer), no redirect followed, within `timeoutMs` from
 * the lookup to the answer's last byte, the answer capped at `maxBytes`.
 */
export const pinnedRequest = (href: string, outbound: OutboundRequest, options: OutboundOptions) =>
  Effect.gen(function* () {
    const url = URL.parse(href)
    const schemes = options.allowHttp === true && options.allowPrivate ? ["https:", "http:"] : ["https:"]
    if (url === null || !schemes.includes(url.protocol))
      return yield* Effect.fail(new ClientFetchError(`${href}: only https URLs are fetched`))
    const addresses = yield* checkedAddresses(url, options)
    return yield* Effect.tryPromise({
      try: (signal) => pinnedExchange(url, addresses, outbound, options, signal),
      catch: (cause) =>
        cause instanceof ClientFetchError
          ? cause
          : new ClientFetchError(`${url.href}: ${cause instanceof Error ? cause.message : String(cause)}`)
    })
  }).pipe(
    Effect.timeoutOrElse({
      duration: options.timeoutMs,
      orElse: () => Effect.fail(new ClientFetchError(`${href} did not answer within ${options.timeoutMs} ms`))
    })
  )

/** `fetch` for oidc-provider: `(url, { headers, signal })`, GET only (all the library sends). */
export const clientFetch = (options: ClientFetchOptions) => {
  const fetchOnce = (href: string, init: RequestInit) =>
    Effect.map(
      pinnedRequest(
        href,
        { method: "GET", headers: Object.fromEntries(new Headers(init.headers)) },
        { ...options, overflow: "fail" }
      ),
      (answer) =>
        new Response(bodiless.has(answer.status) ? null : answer.body, {
          status: answer.status,
          headers: headersOf(answer.headers)
        })
    )

  // The library's own 2.5 s signal is not used: `timeoutMs` (OAUTH_CLIENT_FETCH_TIMEOUT_MS) is the deadline.
  return (input: string | URL, init: RequestInit = {}): Promise<Response> =>
    Effect.runPromise(fetchOnce(String(input), init))
}
