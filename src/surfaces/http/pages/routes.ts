import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { AppConfig } from "../../../config.ts"
import { errorDocsPage } from "../errorDocs.ts"
import { landingPage } from "./landing.ts"
import { claimPage, signInPage } from "./signIn.ts"
import { upgradePage } from "./upgrade.ts"

/** The pages need nothing but their own inline style: no script, no frame, no form, nothing from elsewhere. */
const headers = {
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
}
const htmlPage = (body: string) =>
  HttpServerResponse.text(body, { contentType: "text/html; charset=utf-8", headers })

/** `?account=`, when given: shown escaped, and only so long. */
const accountParam = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const account = new URL(request.url, "http://page").searchParams.get("account")?.trim()
  return account === undefined || account === "" ? undefined : account.slice(0, 100)
})

/**
 * The pages a person meets through the links the API hands out (`upgrade_url`, `claim_url`,
 * `login_url`, `activate_url`, every `doc_url`) and the base URL itself. Server-rendered, no script.
 */
export const PageRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const fixed = (path: `/${string}`, body: string) => router.add("GET", path, htmlPage(body))
    yield* fixed("/", landingPage(config))
    yield* fixed("/docs/errors", errorDocsPage(config))
    yield* fixed("/login", signInPage(config, "Sign in"))
    yield* fixed("/activate", signInPage(config, "Approve a command-line client"))
    yield* router.add(
      "GET",
      "/upgrade",
      Effect.map(accountParam, (account) => htmlPage(upgradePage(config, account)))
    )
    yield* router.add(
      "GET",
      "/claim",
      Effect.map(accountParam, (account) => htmlPage(claimPage(config, account)))
    )
  })
)
