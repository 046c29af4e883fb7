import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { OAuthServer } from "../../src/oauth/OAuthServer.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { flows } from "./flows.ts"
import { authorizeUrl, cookieClient, freePort, pkce, register } from "./support.ts"

const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const redirectUri = "http://127.0.0.1:9/callback"
const { connect, exchange, toolsList } = flows(baseUrl, redirectUri)

const count = (model: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{
      n: number | string
    }>`SELECT COUNT(*) AS n FROM oauth_records WHERE model = ${model}`
    return Number(rows[0]!.n)
  }).pipe(Effect.orDie)

/**
 * One authorization request from `ip`, as a browser sends it: a new sign-in interaction each time.
 * `path` is another spelling the library's router takes for its authorization endpoint.
 */
const authorize = (clientId: string, ip: string, path = "/oauth/authorize") => {
  const url = new URL(
    authorizeUrl(baseUrl, {
      response_type: "code",
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: pkce().challenge,
      code_challenge_method: "S256",
      scope: "mcp",
      resource: `${baseUrl}/mcp/profnet`
    })
  )
  url.pathname = path
  return Effect.promise(() => cookieClient(baseUrl, ip).request(url.href))
}

describe(`OAuth sign-in interactions: a per-IP limit and a sweep (${storeName})`, () => {
  layer(testApp(testOperations, { port, baseUrl }), { timeout: 120_000 })((it) => {
    it.effect(
      "30 authorization requests per IP per 15 minutes; the 31st is a 429 page and opens nothing",
      () =>
        Effect.gen(function* () {
          const clientId = yield* Effect.promise(() => register(baseUrl, redirectUri, "Busy Agent"))
          const before = yield* count("Interaction")
          for (let i = 0; i < 30; i++) {
            const started = yield* authorize(clientId, "10.94.0.1")
            assert.strictEqual(started.status, 303, `request ${i}: ${started.text}`)
            assert.match(new URL(started.location!).pathname, /^\/login\/[\w-]+$/)
          }
          assert.strictEqual((yield* count("Interaction")) - before, 30)
          const refused = yield* Effect.promise(() =>
            fetch(
              authorizeUrl(baseUrl, {
                response_type: "code",
                client_id: clientId,
                redirect_uri: redirectUri,
                code_challenge: pkce().challenge,
                code_challenge_method: "S256"
              }),
              { headers: { "x-forwarded-for": "10.94.0.1" }, redirect: "manual" }
            )
          )
          const page = yield* Effect.promise(() => refused.text())
          assert.strictEqual(refused.status, 429)
          assert.match(refused.headers.get("content-type") ?? "", /^text\/html/)
          assert.isNull(refused.headers.get("location"), "never a redirect to a client not yet checked")
          assert.isAbove(Number(refused.headers.get("retry-after")), 0)
          assert.include(page, "Too many app sign-ins")
          assert.include(page, "30")
          assert.strictEqual(refused.headers.get("x-frame-options"), "DENY")
          assert.strictEqual((yield* count("Interaction")) - before, 30, "no interaction for the refused one")
          // Another address is not affected.
          assert.strictEqual((yield* authorize(clientId, "10.94.0.2")).status, 303)
        })
    )

    it.effect("an IPv6 client counts by its /64: another address in it shares the limit", () =>
      Effect.gen(function* () {
        const clientId = yield* Effect.promise(() => register(baseUrl, redirectUri, "IPv6 Agent"))
        for (let i = 0; i < 30; i++)
          assert.strictEqual(
            (yield* authorize(clientId, `2001:db8:94:1::${(i + 1).toString(16)}`)).status,
            303
          )
        assert.strictEqual((yield* authorize(clientId, "2001:db8:94:1::ffff")).status, 429)
        assert.strictEqual((yield* authorize(clientId, "2001:db8:94:2::1")).status, 303)
      })
    )

    it.effect("the router's other spellings of the endpoint count too: case and a trailing slash", () =>
      Effect.gen(function* () {
        const clientId = yield* Effect.promise(() => register(baseUrl, redirectUri, "Spelling Agent"))
        const spellings = ["/OAUTH/AUTHORIZE", "/oauth/Authorize", "/oauth/authorize/", "/Oauth/authorize/"]
        for (let i = 0; i < 30; i++)
          assert.strictEqual(
            (yield* authorize(clientId, "10.94.0.7", spellings[i % spellings.length])).status,
            303
          )
        for (const path of [...spellings, "/oauth/authorize"])
          assert.strictEqual((yield* authorize(clientId, "10.94.0.7", path)).status, 429, path)
        // Registration's limit reads paths the same way.
        const registrations: Array<number> = []
        for (const path of ["/OAUTH/REGISTER", "/oauth/register/"])
          for (let i = 0; i < 6; i++) {
            const response = yield* Effect.promise(() =>
              fetch(`${baseUrl}${path}`, {
                method: "POST",
                headers: { "content-type": "application/json", "x-forwarded-for": "10.94.0.8" },
                body: JSON.stringify({ redirect_uris: [redirectUri], token_endpoint_auth_method: "none" })
              })
            )
            yield* Effect.promise(() => response.text())
            registrations.push(response.status)
          }
        assert.deepStrictEqual(registrations, [...Array(10).fill(201), 429, 429])
      })
    )

    it.effect("finishing a sign-in is not another authorization: the 30th still completes", () =>
      Effect.gen(function* () {
        const clientId = yield* Effect.promise(() => register(baseUrl, redirectUri, "Patient Agent"))
        for (let i = 0; i < 29; i++) assert.strictEqual((yield* authorize(clientId, "10.94.0.3")).status, 303)
        const connected = yield* connect({ email: "patient@example.com", ip: "10.94.0.3", clientId })
        const tokens = yield* exchange(clientId, connected.code, connected.verifier)
        assert.strictEqual(tokens.status, 200, JSON.stringify(tokens.json))
        assert.strictEqual((yield* toolsList(tokens.json.access_token)).status, 200)
        assert.strictEqual((yield* authorize(clientId, "10.94.0.3")).status, 429)
      })
    )

    it.effect(
      "the sweep forgets expired interactions, and registrations no account connected within their time",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const sql = yield* SqlClient.SqlClient
          const oauth = yield* OAuthServer
          const used = yield* Effect.promise(() => register(baseUrl, redirectUri, "Used Agent"))
          const unused = yield* Effect.promise(() => register(baseUrl, redirectUri, "Unused Agent"))
          const connected = yield* connect({ email: "sweep@example.com", ip: "10.94.0.4", clientId: used })
          // Registrations (the client and its registration access token) carry a deadline until an
          // account connects them; then they stay.
          const deadlines = (clientId: string) =>
            sql<{
              model: string
              expires_at: number | string | null
            }>`SELECT model, expires_at FROM oauth_records
              WHERE (model = 'Client' AND id = ${clientId})
                OR (model = 'RegistrationAccessToken' AND client_id = ${clientId}) ORDER BY model`
          const week = 7 * 24 * 3600 * 1000
          const waiting = yield* deadlines(unused)
          assert.deepStrictEqual(
            waiting.map((row) => row.model),
            ["Client", "RegistrationAccessToken"]
          )
          for (const row of waiting) assert.approximately(Number(row.expires_at), Date.now() + week, 60_000)
          const kept = yield* deadlines(used)
          assert.deepStrictEqual(
            kept.map((row) => [row.model, row.expires_at]),
            [
              ["Client", null],
              ["RegistrationAccessToken", null]
            ]
          )
          // An abandoned interaction, and the unused registration, past their time.
          yield* authorize(unused, "10.94.0.5")
          yield* sql`UPDATE oauth_records SET expires_at = 1 WHERE model = 'Interaction'`
          yield* sql`UPDATE oauth_records SET expires_at = 1
            WHERE (model = 'Client' AND id = ${unused}) OR (model = 'RegistrationAccessToken' AND client_id = ${unused})`
          const swept = yield* oauth.sweepExpired
          assert.isAtLeast(swept, 3)
          assert.strictEqual(yield* count("Interaction"), 0)
          const left = yield* sql<{ model: string }>`SELECT model FROM oauth_records
            WHERE (model = 'Client' AND id IN (${used}, ${unused}))
              OR (model = 'RegistrationAccessToken' AND client_id IN (${used}, ${unused}))`
          assert.deepStrictEqual(left.map((row) => row.model).sort(), ["Client", "RegistrationAccessToken"])
          // The forgotten client is unknown now; the connected one still works.
          assert.strictEqual((yield* authorize(unused, "10.94.0.6")).status, 400)
          const tokens = yield* exchange(used, connected.code, connected.verifier)
          assert.strictEqual(tokens.status, 200)
          assert.strictEqual((yield* app.call("/healthz")).status, 200)
        }).pipe(Effect.orDie)
    )
  })
})
