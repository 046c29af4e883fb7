import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { flows } from "./flows.ts"
import {
  authorizeUrl,
  cookieClient,
  freePort,
  pkce,
  register,
  registration,
  tokenRequest
} from "./support.ts"

const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const redirectUri = "http://127.0.0.1:9/callback"
const profnet = `${baseUrl}/mcp/profnet`

const { connect, exchange, toolsList, callCount } = flows(baseUrl, redirectUri)

describe(`OAuth refusals (${storeName})`, () => {
  layer(testApp(testOperations, { port, baseUrl }), { timeout: 60_000 })((it) => {
    it.effect("metadata: RFC 8414 at the issuer, S256 only, code only; protected resources name it", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const metadata = yield* app.call("/.well-known/oauth-authorization-server")
        assert.strictEqual(metadata.status, 200)
        assert.strictEqual(metadata.body.issuer, baseUrl)
        assert.strictEqual(metadata.body.authorization_endpoint, `${baseUrl}/oauth/authorize`)
        assert.strictEqual(metadata.body.token_endpoint, `${baseUrl}/oauth/token`)
        assert.strictEqual(metadata.body.registration_endpoint, `${baseUrl}/oauth/register`)
        assert.deepStrictEqual(metadata.body.code_challenge_methods_supported, ["S256"])
        assert.deepStrictEqual(metadata.body.response_types_supported, ["code"])
        assert.isTrue(metadata.body.client_id_metadata_document_supported)
        assert.isUndefined(metadata.body.dpop_signing_alg_values_supported)
        const resource = yield* app.call("/.well-known/oauth-protected-resource/mcp/forum")
        assert.deepStrictEqual(resource.body.authorization_servers, [baseUrl])
        assert.strictEqual(resource.body.resource, `${baseUrl}/mcp/forum`)
      })
    )

    it.effect("authorization requests: no PKCE, plain PKCE, a foreign resource, a foreign redirect", () =>
      Effect.gen(function* () {
        const clientId = yield* Effect.promise(() => register(baseUrl, redirectUri))
        const browser = cookieClient(baseUrl, "10.78.0.1")
        const base = {
          response_type: "code",
          client_id: clientId,
          redirect_uri: redirectUri,
          scope: "mcp",
          resource: profnet
        }
        const errorOf = (answer: { location: string | undefined }) =>
          answer.location === undefined ? undefined : new URL(answer.location).searchParams.get("error")

        const noPkce = yield* Effect.promise(() => browser.request(authorizeUrl(baseUrl, base)))
        assert.strictEqual(noPkce.status, 303)
        assert.isTrue(noPkce.location!.startsWith(redirectUri))
        assert.strictEqual(errorOf(noPkce), "invalid_request")

        const plain = yield* Effect.promise(() =>
          browser.request(
            authorizeUrl(baseUrl, { ...base, code_challenge: "a".repeat(43), code_challenge_method: "plain" })
          )
        )
        assert.strictEqual(errorOf(plain), "invalid_request")

        const { challenge } = pkce()
        const withPkce = { ...base, code_challenge: challenge, code_challenge_method: "S256" }
        const foreign = yield* Effect.promise(() =>
          browser.request(authorizeUrl(baseUrl, { ...withPkce, resource: "https://elsewhere.example/mcp" }))
        )
        assert.strictEqual(errorOf(foreign), "invalid_target")

        // A redirect URI the client did not register: an error page here, never a redirect there.
        for (const evil of [
          "https://evil.example/callback",
          `${redirectUri}/../evil`,
          "http://127.0.0.1:9/callback?x=1"
        ]) {
          const open = yield* Effect.promise(() =>
            browser.request(authorizeUrl(baseUrl, { ...withPkce, redirect_uri: evil }))
          )
          assert.strictEqual(open.status, 400, evil)
          assert.isUndefined(open.location)
          assert.include(open.text, "redirect_uri")
        }
        const unknownClient = yield* Effect.promise(() =>
          browser.request(authorizeUrl(baseUrl, { ...withPkce, client_id: "no-such-client" }))
        )
        assert.strictEqual(unknownClient.status, 400)
        assert.isUndefined(unknownClient.location)
      })
    )

    it.effect("token requests: wrong verifier, reused code; the token works on its mount only", () =>
      Effect.gen(function* () {
        const clientId = yield* Effect.promise(() => register(baseUrl, redirectUri))
        const first = yield* connect({ email: "neg-one@example.com", ip: "10.78.0.2", clientId })
        const wrong = yield* exchange(clientId, first.code, pkce().verifier)
        assert.strictEqual(wrong.status, 400)
        assert.strictEqual(wrong.json.error, "invalid_grant")

        const second = yield* connect({ email: "neg-one@example.com", ip: "10.78.0.3", clientId })
        const tokens = yield* exchange(clientId, second.code, second.verifier)
        assert.strictEqual(tokens.status, 200, JSON.stringify(tokens.json))
        assert.strictEqual(tokens.json.token_type, "Bearer")
        const before = yield* callCount
        const forum = yield* toolsList(tokens.json.access_token, "/mcp/forum")
        assert.strictEqual(forum.status, 401)
        assert.include(forum.headers.get("www-authenticate") ?? "", 'error="invalid_token"')
        assert.include(forum.headers.get("www-authenticate") ?? "", "oauth-protected-resource/mcp/forum")
        const garbage = yield* toolsList("not-a-real-token-at-all")
        assert.strictEqual(garbage.status, 401)
        assert.strictEqual((yield* toolsList(tokens.json.access_token)).status, 200)
        assert.strictEqual(yield* callCount, before)

        // A code used twice: refused, and what the first use issued is revoked (RFC 6749 section 4.1.2).
        const reused = yield* exchange(clientId, second.code, second.verifier)
        assert.strictEqual(reused.status, 400)
        assert.strictEqual(reused.json.error, "invalid_grant")

        assert.strictEqual((yield* toolsList(tokens.json.access_token)).status, 401)
      })
    )

    it.effect("dynamic registration is rate limited per client address", () =>
      Effect.gen(function* () {
        const statuses: Array<number> = []
        for (let i = 0; i < 11; i++) {
          const response = yield* Effect.promise(() =>
            registration(baseUrl, redirectUri, `Agent ${i}`, "10.78.1.1")
          )
          statuses.push(response.status)
          if (i === 10) {
            const body = (yield* Effect.promise(() => response.json())) as { code: string }
            assert.strictEqual(body.code, "RATE_LIMITED")
          } else yield* Effect.promise(() => response.text())
        }
        assert.deepStrictEqual(statuses, [...Array(10).fill(201), 429])
        const elsewhere = yield* Effect.promise(() =>
          registration(baseUrl, redirectUri, "Agent", "10.78.1.2")
        )
        assert.strictEqual(elsewhere.status, 201)
      })
    )

    it.effect(
      "a person who denies: access_denied at the client, no app; an ended sign-in is a page saying so",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const clientId = yield* Effect.promise(() => register(baseUrl, redirectUri, "Denied Agent"))
          const denied = yield* connect({
            email: "neg-deny@example.com",
            ip: "10.78.0.8",
            clientId,
            decision: "deny"
          })
          assert.strictEqual(denied.error, "access_denied")
          assert.isNull(denied.code)
          const management = yield* signIn(app, "neg-deny@example.com", { ip: "10.78.0.9" })
          assert.deepStrictEqual(
            (yield* app.call("/v1/apps", { key: management.management_token })).body.apps,
            []
          )
          const ended = yield* Effect.promise(() =>
            cookieClient(baseUrl, "10.78.0.10").request("/login/no-such-interaction")
          )
          assert.strictEqual(ended.status, 400)
          assert.include(ended.text, "This sign-in has ended")
        })
    )

    it.effect("another account's app: not listed, not revocable; revoking one's own stops it at once", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const clientId = yield* Effect.promise(() => register(baseUrl, redirectUri, "Shared Agent"))
        const alice = yield* connect({ email: "neg-alice@example.com", ip: "10.78.0.4", clientId })
        const bob = yield* connect({ email: "neg-bob@example.com", ip: "10.78.0.5", clientId })
        assert.notStrictEqual(alice.accountId, bob.accountId)
        const aliceTokens = (yield* exchange(clientId, alice.code, alice.verifier)).json
        const bobTokens = (yield* exchange(clientId, bob.code, bob.verifier)).json

        const aliceManagement = yield* signIn(app, "neg-alice@example.com", { ip: "10.78.0.6" })
        const bobManagement = yield* signIn(app, "neg-bob@example.com", { ip: "10.78.0.7" })
        const bobApps = yield* app.call("/v1/apps", { key: bobManagement.management_token })
        const bobApp = bobApps.body.apps[0].app_id as string
        const aliceApps = yield* app.call("/v1/apps", { key: aliceManagement.management_token })
        assert.strictEqual(aliceApps.body.apps.length, 1)
        assert.notStrictEqual(aliceApps.body.apps[0].app_id, bobApp)

        const revokeAs = (token: string, appId: string) =>
          app.call("/v1/apps/revoke", {
            method: "POST",
            key: token,
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ app_id: appId })
          })
        const foreign = yield* revokeAs(aliceManagement.management_token, bobApp)
        assert.strictEqual(foreign.status, 404)
        assert.strictEqual(foreign.body.code, "NOT_FOUND")
        assert.strictEqual((yield* toolsList(bobTokens.access_token)).status, 200)

        const withKey = yield* app.call("/v1/apps", { key: (yield* app.mint()).key })
        assert.strictEqual(withKey.status, 401)

        const own = yield* revokeAs(bobManagement.management_token, bobApp)
        assert.strictEqual(own.status, 200)
        assert.strictEqual((yield* toolsList(bobTokens.access_token)).status, 401)
        const refresh = yield* Effect.promise(() =>
          tokenRequest(baseUrl, {
            grant_type: "refresh_token",
            refresh_token: bobTokens.refresh_token,
            client_id: clientId
          })
        )
        assert.strictEqual(refresh.json.error, "invalid_grant")
        assert.strictEqual((yield* revokeAs(bobManagement.management_token, bobApp)).status, 404)
        // Alice's connection of the same client is untouched.
        assert.strictEqual((yield* toolsList(aliceTokens.access_token)).status, 200)
      })
    )
  })
})
