import type { LookupAddress } from "node:dns"
import { lookup } from "node:dns/promises"
import type { IncomingHttpHeaders } from "node:http"
import { request } from "node:https"
import type { LookupFunction } from "node:net"
import { Effect } from "effect"
import { isPublicAddress } from "../domain/addresses.ts"

/**
 * Every request the authorization server makes to a URL a client named (its Client ID Metadata
 * Document, and any `jwks_uri` or `sector_identifier_uri`): oidc-provider's `fetch`. The host is
 * resolved first and every address it resolves to must be public (`isPublicAddress`), before any
 * connection; the connection then goes to the address that was checked (no second DNS answer),
 * over https only, without following redirects, within a deadline and a body size.
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

/** One GET to `url`, connected to one of the `checked` addresses, the body read up to `maxBytes`. */
const pinnedGet = (
  url: URL,
  checked: ReadonlyArray<LookupAddress>,
  headers: Headers,
  maxBytes: number,
  signal: AbortSignal
): Promise<Response> =>
  new Promise((resolve, reject) => {
    const tooLarge = () => new ClientFetchError(`${url.href} answered more than ${maxBytes} bytes`)
    const outgoing = request(
      url,
      {
        method: "GET",
        headers: Object.fromEntries(headers),
        lookup: pinnedLookup(checked),
        // No pooled connection: each fetch connects to the address it checked.
        agent: false,
        signal
      },
      (answer) => {
        if (Number(answer.headers["content-length"] ?? 0) > maxBytes) {
          outgoing.destroy()
          return reject(tooLarge())
        }
        const chunks: Array<Buffer> = []
        let size = 0
        answer.on("data", (chunk: Buffer) => {
          size += chunk.length
          if (size > maxBytes) {
            outgoing.destroy()
            reject(tooLarge())
          } else chunks.push(chunk)
        })
        answer.on("error", reject)
        answer.on("end", () => {
          const status = answer.statusCode ?? 502
          resolve(
            new Response(bodiless.has(status) ? null : Buffer.concat(chunks), {
              status,
              headers: headersOf(answer.headers)
            })
          )
        })
      }
    )
    outgoing.on("error", reject)
    outgoing.end()
  })

/** `fetch` for oidc-provider: `(url, { headers, signal })`, GET only (all the library sends). */
export const clientFetch = (options: ClientFetchOptions) => {
  const resolveHost = options.resolve ?? systemResolve

  const fetchOnce = (href: string, init: RequestInit) =>
    Effect.gen(function* () {
      const url = URL.parse(href)
      if (url === null || url.protocol !== "https:")
        return yield* Effect.fail(new ClientFetchError(`${href}: only https URLs are fetched`))
      const host = url.hostname.replace(/^\[(.*)\]$/, "$1")
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
      return yield* Effect.tryPromise({
        try: (signal) => pinnedGet(url, addresses, new Headers(init.headers), options.maxBytes, signal),
        catch: (cause) =>
          cause instanceof ClientFetchError
            ? cause
            : new ClientFetchError(`${url.href}: ${cause instanceof Error ? cause.message : String(cause)}`)
      })
    }).pipe(
      Effect.timeoutOrElse({
        duration: options.timeoutMs,
        orElse: () =>
          Effect.fail(new ClientFetchError(`${href} did not answer within ${options.timeoutMs} ms`))
      })
    )

  // The library's own 2.5 s signal is not used: `timeoutMs` (OAUTH_CLIENT_FETCH_TIMEOUT_MS) is the deadline.
  return (input: string | URL, init: RequestInit = {}): Promise<Response> =>
    Effect.runPromise(fetchOnce(String(input), init))
}
