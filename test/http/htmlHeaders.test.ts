import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { post, signIn } from "../identity/support.ts"
import { authorizeUrl, cookieClient, freePort, pkce, register } from "../oauth/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`

/** What every HTML answer of the service carries, whoever wrote it (our pages, Scalar, oidc-provider). */
const assertHardened = (where: string, headers: Headers) => {
  assert.match(headers.get("content-type") ?? "", /^text\/html/, `${where}: an HTML answer`)
  const csp = headers.get("content-security-policy") ?? ""
  assert.include(csp, "default-src 'none'", `${where}: CSP`)
  assert.include(csp, "frame-ancestors 'none'", `${where}: CSP frame-ancestors`)
  assert.include(csp, "base-uri 'none'", `${where}: CSP base-uri`)
  assert.notInclude(csp, "'unsafe-eval'", `${where}: no eval`)
  assert.strictEqual(headers.get("x-content-type-options"), "nosniff", `${where}: nosniff`)
  assert.strictEqual(headers.get("x-frame-options"), "DENY", `${where}: X-Frame-Options`)
  assert.strictEqual(headers.get("referrer-policy"), "same-origin", `${where}: Referrer-Policy`)
}

describe(`the security headers of every HTML page (${storeName})`, () => {
  layer(testApp(testOperations, { port, baseUrl }), { timeout: 60_000 })((it) => {
    it.effect("every page, signed in or not, the docs, the OAuth pages and the 404 pages", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.91.0.1"
        const session = yield* signIn(app, "headers@example.com", { ip })
        const cookie = `svc_session=${session.management_token}`
        const checkout = yield* post(app, "/v1/checkout", { pack: "flex" }, { ip })
        assert.strictEqual(checkout.status, 200, JSON.stringify(checkout.body))
        const portal = yield* post(app, "/v1/portal", {}, { key: session.management_token, ip })
        assert.strictEqual(portal.status, 200, JSON.stringify(portal.body))
        const pages: ReadonlyArray<readonly [string, number, Record<string, string>?]> = [
          ["/", 200],
          ["/login", 200],
          ["/claim", 200],
          ["/activate", 200, { cookie }],
          ["/recover", 200],
          ["/upgrade", 200],
          [new URL(checkout.body.checkout_url).pathname, 200],
          [`${new URL(portal.body.url).pathname}${new URL(portal.body.url).search}`, 200],
          ["/dashboard", 200, { cookie }],
          ["/dashboard/keys", 200, { cookie }],
          ["/docs", 200],
          ["/docs/errors", 200],
          ["/login/no-such-interaction", 400],
          ["/checkout/cs_no_such_session", 404],
          ["/portal?session=nope", 404]
        ]
        for (const [path, status, headers] of pages) {
          const reply = yield* app.call(path, { ip, ...(headers === undefined ? {} : { headers }) })
          assert.strictEqual(reply.status, status, path)
          assertHardened(path, reply.headers)
        }
        // An unknown route is a problem document, not a page: no HTML to frame or sniff.
        const unknown = yield* app.call("/no/such/page", { ip })
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.headers.get("content-type"), "application/problem+json")
      })
    )

    it.effect("oidc-provider's own pages: its error page and the consent step of an interaction", () =>
      Effect.gen(function* () {
        const redirectUri = "http://127.0.0.1:9/callback"
        const browser = cookieClient(baseUrl, "10.91.0.2")
        // An unknown client: the library renders its error page itself, on the Node response.
        const unknownClient = yield* Effect.promise(() =>
          browser.request(
            authorizeUrl(baseUrl, {
              response_type: "code",
              client_id: "no-such-client",
              redirect_uri: redirectUri,
              code_challenge: pkce().challenge,
              code_challenge_method: "S256"
            })
          )
        )
        assert.strictEqual(unknownClient.status, 400)
        assert.include(unknownClient.text, "Could not connect the app")
        const raw = yield* Effect.promise(() =>
          fetch(
            authorizeUrl(baseUrl, {
              response_type: "code",
              client_id: "no-such-client",
              redirect_uri: redirectUri
            }),
            { headers: { "x-forwarded-for": "10.91.0.2" } }
          )
        )
        yield* Effect.promise(() => raw.text())
        assertHardened("the OAuth error page", raw.headers)

        const clientId = yield* Effect.promise(() => register(baseUrl, redirectUri, "Header Agent"))
        const started = yield* Effect.promise(() =>
          browser.request(
            authorizeUrl(baseUrl, {
              response_type: "code",
              client_id: clientId,
              redirect_uri: redirectUri,
              code_challenge: pkce().challenge,
              code_challenge_method: "S256",
              resource: `${baseUrl}/mcp/profnet`
            })
          )
        )
        assert.strictEqual(started.status, 303, started.text)
        const login = yield* Effect.promise(() =>
          fetch(started.location!, {
            headers: {
              "x-forwarded-for": "10.91.0.2",
              cookie: [...browser.jar].map(([name, value]) => `${name}=${value}`).join("; ")
            }
          })
        )
        assert.strictEqual(login.status, 200)
        yield* Effect.promise(() => login.text())
        assertHardened("the interaction's email step", login.headers)
      })
    )
  })
})
