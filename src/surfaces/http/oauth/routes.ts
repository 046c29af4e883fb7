import type { IncomingMessage, ServerResponse } from "node:http"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { signInCodePattern } from "../../../domain/signIn.ts"
import { type ConsentRequest, OAuthServer } from "../../../oauth/OAuthServer.ts"
import { oauthRoutes } from "../../../oauth/policy.ts"
import { Problems } from "../../common/problems.ts"
import { csrfMatches, csrfToken, htmlPage, queryParams, withSession } from "../pages/respond.ts"
import { badEmail, pageSession, rateLimitHeaders, tooMany } from "../pages/session.ts"
import { codePage, consentPage, emailPage, expiredPage, noAccountPage, tooManySignInsPage } from "./pages.ts"

const nodeOf = (request: HttpServerRequest.HttpServerRequest) => ({
  req: NodeHttpServerRequest.toIncomingMessage(request) as IncomingMessage,
  res: NodeHttpServerRequest.toServerResponse(request) as ServerResponse
})

/** The `{uid}` of `/login/{uid}/...`. */
const uidOf = (request: HttpServerRequest.HttpServerRequest) =>
  new URL(request.url, "http://page").pathname.split("/")[2] ?? ""

/**
 * The consent form's submission ends, through the authorization server, at the client's redirect
 * URI: Chromium applies `form-action` to that redirect, so the page names its origin (or scheme).
 */
const formTargets = (request: ConsentRequest): ReadonlyArray<string> => {
  if (!URL.canParse(request.redirectUri)) return []
  const url = new URL(request.redirectUri)
  if (url.protocol !== "http:" && url.protocol !== "https:") return [url.protocol]
  return [url.hostname === "[::1]" ? `http://*${url.port === "" ? "" : `:${url.port}`}` : url.origin]
}

const seeOther = (location: string) => HttpServerResponse.redirect(location, { status: 303 })

/**
 * A path as oidc-provider's router matches it: letters in any case, one trailing slash allowed
 * (`/OAUTH/Authorize/` is its authorization endpoint too), so a limit cannot be stepped around.
 */
const routedAs = (path: string) =>
  (path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path).toUpperCase()
const registrationRoute = routedAs(oauthRoutes.registration)
const authorizationRoute = routedAs(oauthRoutes.authorization)

/**
 * The authorization server's endpoints (handed to the library as raw Node requests: it reads the
 * body and answers itself) and our interaction pages at `/login/{uid}`.
 */
export const OAuthRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const oauth = yield* OAuthServer
    const problems = yield* Problems
    const { config, signIn, bearers, personal, clientIp, session, withForm } = yield* pageSession
    const baseUrl = config.baseUrl

    /**
     * The service's per-IP limits, checked before the library stores anything: a refused client
     * registration is a problem document (for the client's program), a refused authorization
     * request a page (for the person's browser: the client and its redirect URI are not checked
     * yet, so the answer cannot go back to it).
     */
    const refusal = (request: HttpServerRequest.HttpServerRequest, ip: string) => {
      const path = routedAs(new URL(request.url, "http://oauth").pathname)
      if (request.method === "POST" && path === registrationRoute)
        return oauth.admitRegistration(ip).pipe(
          Effect.as(undefined),
          Effect.catchTag("RateLimited", (refused) => Effect.succeed(problems.render(refused)))
        )
      if (
        (request.method === "GET" || request.method === "HEAD" || request.method === "POST") &&
        path === authorizationRoute
      )
        return oauth.admitAuthorization(ip).pipe(
          Effect.as(undefined),
          Effect.catchTag("RateLimited", (refused) =>
            Effect.succeed(
              htmlPage(
                tooManySignInsPage(baseUrl, {
                  message: refused.message,
                  retryAfterSeconds: refused.retry_after_seconds
                }),
                {
                  status: 429,
                  private: true,
                  headers: { "retry-after": String(refused.retry_after_seconds) }
                }
              )
            )
          )
        )
      return Effect.succeed(undefined)
    }

    const handOver = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const perIpKey = bearers.clientIp(request)
      const refused = yield* refusal(request, perIpKey)
      if (refused !== undefined) return refused
      const node = nodeOf(request)
      yield* oauth.serve(node, { address: bearers.clientAddress(request), perIpKey })
      // The library has written and ended the response; the server writes nothing more (the
      // status is for the request log).
      return HttpServerResponse.empty({ status: node.res.statusCode })
    })
    yield* router.add("*", "/oauth/*", handOver)
    for (const path of [
      "/.well-known/oauth-authorization-server",
      "/.well-known/openid-configuration"
    ] as const) {
      yield* router.add("GET", path, handOver)
      yield* router.add("OPTIONS", path, handOver)
    }

    /** The interaction this browser is in, or the page saying it ended. */
    const current = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const uid = uidOf(request)
      const consent = yield* oauth.interaction(nodeOf(request), uid)
      return { request, uid, consent }
    })
    const ended = htmlPage(expiredPage(baseUrl), { status: 400, ...personal })

    /** The consent page for the signed-in email, or the email step when nobody is signed in here. */
    const signedInOrEmail = (uid: string, consent: ConsentRequest, another: boolean) =>
      Effect.gen(function* () {
        const signedIn = another ? undefined : yield* session
        if (signedIn === undefined) return htmlPage(emailPage(baseUrl, uid, consent), personal)
        const accounts = signedIn.governor.accounts.filter((account) => account.state === "active")
        if (accounts.length === 0) return htmlPage(noAccountPage(baseUrl, signedIn.governor.email), personal)
        return htmlPage(
          consentPage(baseUrl, uid, consent, {
            email: signedIn.governor.email,
            accounts,
            csrf: csrfToken(signedIn.token)
          }),
          { ...personal, formTargets: formTargets(consent) }
        )
      })

    yield* router.add(
      "GET",
      "/login/:uid",
      Effect.gen(function* () {
        const { uid, consent } = yield* current
        if (consent === undefined) return ended
        const query = yield* queryParams
        return yield* signedInOrEmail(uid, consent, query.get("another") === "1")
      })
    )

    yield* router.add(
      "POST",
      "/login/:uid/email",
      withForm((form) =>
        Effect.gen(function* () {
          const { uid, consent } = yield* current
          if (consent === undefined) return ended
          const email = form.get("email")
          const ip = yield* clientIp
          return yield* signIn.start({ email, ip, keyId: undefined }).pipe(
            Effect.as(htmlPage(codePage(baseUrl, uid, consent, email.toLowerCase()), personal)),
            Effect.catchTags({
              InvalidInput: () =>
                Effect.succeed(
                  htmlPage(emailPage(baseUrl, uid, consent, badEmail), { status: 400, ...personal })
                ),
              RateLimited: (error) =>
                Effect.succeed(
                  htmlPage(emailPage(baseUrl, uid, consent, tooMany(error)), {
                    status: 429,
                    ...personal,
                    headers: rateLimitHeaders(error)
                  })
                )
            }),
            Effect.orDie
          )
        })
      )
    )

    yield* router.add(
      "POST",
      "/login/:uid/code",
      withForm((form) =>
        Effect.gen(function* () {
          const { uid, consent } = yield* current
          if (consent === undefined) return ended
          const email = form.get("email")
          const code = form.get("code").replace(/\s/g, "")
          const wrong = (status: number, message: string) =>
            htmlPage(codePage(baseUrl, uid, consent, email, message), { status, ...personal })
          if (!signInCodePattern.test(code)) return wrong(400, "The code is the 6 digits in the email.")
          // The same sign-in as `/login`: this browser is signed in to the service too.
          const ip = yield* clientIp
          return yield* signIn.verifyCode({ email, code, ip, keyId: undefined, label: "web" }).pipe(
            Effect.map((signedIn) =>
              withSession(seeOther(`${baseUrl}/login/${uid}`), signedIn.management_token, baseUrl)
            ),
            Effect.catchTags({
              InvalidInput: () =>
                Effect.succeed(htmlPage(emailPage(baseUrl, uid, consent, badEmail), personal)),
              Unauthorized: () =>
                Effect.succeed(
                  wrong(
                    401,
                    `That code is wrong, used or expired. A code works for 10 minutes and stops taking tries from here after ${config.policy.signIn.wrongTriesPerCodeIp} wrong ones.`
                  )
                ),
              RateLimited: (error) =>
                Effect.succeed(
                  htmlPage(codePage(baseUrl, uid, consent, email, tooMany(error)), {
                    status: 429,
                    ...personal,
                    headers: rateLimitHeaders(error)
                  })
                )
            }),
            Effect.orDie
          )
        })
      )
    )

    yield* router.add(
      "POST",
      "/login/:uid/consent",
      withForm((form) =>
        Effect.gen(function* () {
          const { request, uid, consent } = yield* current
          if (consent === undefined) return ended
          const signedIn = yield* session
          if (signedIn === undefined || !csrfMatches(signedIn.token, form.get("csrf")))
            return yield* signedInOrEmail(uid, consent, false)
          if (form.get("decision") !== "allow") {
            const back = yield* oauth.deny(nodeOf(request), uid)
            return back === undefined ? ended : seeOther(back)
          }
          const account = signedIn.governor.accounts.find(
            (candidate) => candidate.id === form.get("account_id") && candidate.state === "active"
          )
          if (account === undefined) return yield* signedInOrEmail(uid, consent, false)
          const back = yield* Effect.orDie(
            oauth.approve(nodeOf(request), uid, { accountId: account.id, email: signedIn.governor.email })
          )
          return back === undefined ? ended : seeOther(back)
        })
      )
    )
  })
)
