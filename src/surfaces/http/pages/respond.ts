import { createHmac, timingSafeEqual } from "node:crypto"
import { ByteSize, Effect } from "effect"
import { HttpIncomingMessage, HttpServerRequest, HttpServerResponse } from "effect/http"
import { contentSecurityPolicy, htmlSecurityHeaders } from "../../../domain/html.ts"
import { announcedBodyTooLarge } from "../../common/limits.ts"

/**
 * What every page answer shares: the security headers, the session cookie, CSRF tokens and the
 * reading of url-encoded form bodies under the body limit.
 *
 * The pages need nothing but their own inline style: no script, no frame, nothing from elsewhere.
 * Forms post to the service itself; a page whose form ends in a loopback redirect (RFC 8252) also
 * names that one origin, because Chromium applies `form-action` to the redirect of a submission.
 * The referrer goes to the service only (its addresses may hold a link token), which also makes a
 * browser send the pages' own origin as `Origin` with their forms (`no-referrer` makes it "null").
 */

export interface PageOptions {
  readonly status?: number
  /** Origins (besides the service) a form on the page may end at. */
  readonly formTargets?: ReadonlyArray<string>
  /** Pages about a person (sessions, codes, keys) are never stored by a cache. */
  readonly private?: boolean
  readonly headers?: Readonly<Record<string, string>>
}

export const htmlPage = (body: string, options: PageOptions = {}) =>
  HttpServerResponse.text(body, {
    status: options.status ?? 200,
    contentType: "text/html; charset=utf-8",
    headers: {
      ...htmlSecurityHeaders,
      "content-security-policy": contentSecurityPolicy({ formTargets: options.formTargets ?? [] }),
      ...(options.private === true ? { "cache-control": "no-store" } : {}),
      ...options.headers
    }
  })

/** The session cookie: the management token of a browser sign-in, never readable by a script. */
export const sessionCookie = "svc_session"
const sessionMaxAgeSeconds = 90 * 24 * 60 * 60

export const withSession = (
  response: HttpServerResponse.HttpServerResponse,
  token: string,
  baseUrl: string
) =>
  HttpServerResponse.setCookieUnsafe(response, sessionCookie, token, {
    httpOnly: true,
    sameSite: "lax",
    secure: baseUrl.startsWith("https:"),
    path: "/",
    maxAge: `${sessionMaxAgeSeconds} seconds`
  })

export const withoutSession = (response: HttpServerResponse.HttpServerResponse, baseUrl: string) =>
  HttpServerResponse.expireCookieUnsafe(response, sessionCookie, {
    httpOnly: true,
    sameSite: "lax",
    secure: baseUrl.startsWith("https:"),
    path: "/"
  })

/**
 * The hidden field of every form a session's cookie authenticates: derived from the session's own
 * token, so another site (which cannot read the cookie or the page) cannot forge it.
 */
export const csrfToken = (sessionToken: string) =>
  createHmac("sha256", sessionToken).update("svc page form").digest("base64url")

export const csrfMatches = (sessionToken: string, sent: string) => {
  const expected = Buffer.from(csrfToken(sessionToken))
  const given = Buffer.from(sent)
  return expected.length === given.length && timingSafeEqual(expected, given)
}

/** A submitted form's fields: the first value of each, trimmed; absent fields are "". */
export interface Form {
  readonly get: (name: string) => string
}

export type FormRefusal = "too-large" | "not-a-form" | "cross-site"

const isBodyTooLarge = (error: unknown) =>
  typeof error === "object" &&
  error !== null &&
  "reason" in error &&
  (error.reason as { readonly reason?: string } | undefined)?.reason === "BodyTooLarge"

/**
 * Whether a form was submitted from the service's own pages, judged before any session exists (login
 * CSRF: another site's form must not sign a browser in, or start a sign-in in its name). Fetch
 * metadata when the browser sends it, then `Origin`, then `Referer` when there is no `Origin`; the
 * service's own origin is the configured base URL's, or the one this request was addressed to (its
 * `Host`), which another site's form cannot name. A request with none of the three is not a
 * browser's form submission (browsers send `Origin` with every POST), so no other site caused it.
 */
export const fromOwnPages = (headers: Readonly<Record<string, string | undefined>>, ownOrigin: string) => {
  const site = headers["sec-fetch-site"]
  if (site !== undefined && site !== "same-origin" && site !== "none") return false
  const ours = (url: string) =>
    URL.canParse(url) &&
    (new URL(url).origin === ownOrigin || (headers.host !== undefined && new URL(url).host === headers.host))
  const origin = headers.origin
  if (origin !== undefined) return ours(origin)
  const referer = headers.referer
  return referer === undefined || ours(referer)
}

/** Reads an `application/x-www-form-urlencoded` body from the service's own pages, under the configured limit. */
export const readForm = (config: { readonly maxBodyBytes: number; readonly baseUrl: string }) =>
  Effect.gen(function* () {
    const { maxBodyBytes } = config
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!fromOwnPages(request.headers, new URL(config.baseUrl).origin)) return "cross-site" as FormRefusal
    const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
    if (type !== "application/x-www-form-urlencoded") return "not-a-form" as FormRefusal
    if (announcedBodyTooLarge(request.headers, maxBodyBytes) !== undefined) return "too-large" as FormRefusal
    const read = yield* request.urlParamsBody.pipe(
      Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxBodyBytes)),
      Effect.result
    )
    if (read._tag === "Failure")
      return (isBodyTooLarge(read.failure) ? "too-large" : "not-a-form") as FormRefusal
    const params = read.success.params
    const form: Form = {
      get: (name) => {
        const value = params.find(([key]) => key === name)?.[1]
        return typeof value === "string" ? value.trim() : ""
      }
    }
    return form
  })

/** The request's query parameters. */
export const queryParams = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => new URL(request.url, "http://page").searchParams
)

/** The session token the browser sent, if any. */
export const cookieToken = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => request.cookies[sessionCookie]
)
