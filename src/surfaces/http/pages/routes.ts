import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { AppConfig } from "../../../config.ts"
import { managementTokenPattern } from "../../../domain/secrets.ts"
import { errorDocsPage } from "../errorDocs.ts"
import { DeviceAndRecoveryPageRoutes } from "./deviceAndRecoveryRoutes.ts"
import { landingPage } from "./landing.ts"
import { cookieToken, htmlPage } from "./respond.ts"
import { SignInPageRoutes } from "./signInRoutes.ts"
import { upgradePage } from "./upgrade.ts"

/** `?account=`, when given: shown escaped, and only so long. */
const accountParam = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const account = new URL(request.url, "http://page").searchParams.get("account")?.trim()
  return account === undefined || account === "" ? undefined : account.slice(0, 100)
})

/** The pages that read nothing but the configuration (and `?account=`). */
const InformationPageRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const fixed = (path: `/${string}`, body: string) => router.add("GET", path, htmlPage(body))
    // The header says "Dashboard" to a browser holding a sign-in and "Sign in" to others; which is
    // read from the cookie's shape alone (an expired one still leads to /login from the dashboard).
    const home = {
      signedIn: htmlPage(landingPage(config, true), { private: true }),
      out: landingPage(config, false)
    }
    yield* router.add(
      "GET",
      "/",
      Effect.map(cookieToken, (token) =>
        token !== undefined && managementTokenPattern.test(token)
          ? home.signedIn
          : htmlPage(home.out, { headers: { vary: "cookie" } })
      )
    )
    // Browsers ask every site for its icon on their own; there is none, and saying so is not an error.
    yield* router.add(
      "GET",
      "/favicon.ico",
      HttpServerResponse.empty({ status: 204, headers: { "cache-control": "public, max-age=86400" } })
    )
    // Crawlers may read every page; the private ones answer only a sign-in.
    yield* router.add(
      "GET",
      "/robots.txt",
      HttpServerResponse.text(`User-agent: *\nAllow: /\n`, { contentType: "text/plain; charset=utf-8" })
    )
    yield* fixed("/docs/errors", errorDocsPage(config))
    yield* router.add(
      "GET",
      "/upgrade",
      Effect.map(accountParam, (account) => htmlPage(upgradePage(config, account)))
    )
  })
)

/**
 * The pages a person meets through the links the API hands out (`upgrade_url`, `claim_url`,
 * `login_url`, `activate_url`, every `doc_url`, recovery links) and the base URL itself.
 * Server-rendered, no script; the sign-in pages work with plain HTML forms.
 */
export const PageRoutes = Layer.mergeAll(InformationPageRoutes, SignInPageRoutes, DeviceAndRecoveryPageRoutes)
