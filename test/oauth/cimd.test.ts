import { afterAll, assert, beforeAll, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { documentServer, json } from "../support/documentServer.ts"
import { testOperations } from "../support/testOperations.ts"
import { flows } from "./flows.ts"
import { authorizeUrl, cookieClient, freePort, pkce } from "./support.ts"

const redirectUri = "http://127.0.0.1:9/callback"

/** A Client ID Metadata Document: the client id is the https URL the server fetches it from. */
const documentFor = (clientId: string, extra: Record<string, unknown> = {}) => ({
  client_id: clientId,
  client_name: "Metadata Agent",
  redirect_uris: [redirectUri],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
  ...extra
})

let documents: Awaited<ReturnType<typeof documentServer>>
const documentUrl = (path: string, host = "127.0.0.1") => `https://${host}:${documents.port}${path}`
beforeAll(async () => {
  documents = await documentServer({
    "/client.json": (request, response) => json(documentFor(documentUrl("/client.json")))(request, response),
    "/plain-http.json": (request, response) =>
      json(
        documentFor(documentUrl("/plain-http.json"), { redirect_uris: ["http://agent.example/callback"] })
      )(request, response),
    "/redirect.json": (_request, response) => response.writeHead(302, { location: "/client.json" }).end(),
    "/big.json": (_request, response) =>
      response
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify(documentFor(documentUrl("/big.json"), { client_name: "x".repeat(6000) })))
  })
})
afterAll(() => documents.close())

/** An authorization request naming `clientId`, from `ip`: the status and the page or redirect. */
const authorize = (baseUrl: string, clientId: string, ip: string) =>
  Effect.promise(() =>
    cookieClient(baseUrl, ip).request(
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
  )

const requestsFor = (path: string) => documents.requests.filter((url) => url === path).length

describe(`a client identified by its metadata document, served from loopback (${storeName})`, async () => {
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const { connect, exchange, toolsList } = flows(baseUrl, redirectUri)
  // Only this switch lets the server fetch from loopback at all (see the next block).
  layer(testApp(testOperations, { port, baseUrl, oauthAllowPrivateClientUrls: true }), { timeout: 60_000 })(
    (it) => {
      it.effect(
        "no registration: sign-in, consent naming the document's client, a token; one fetch, then the cache",
        () =>
          Effect.gen(function* () {
            const app = yield* TestApp
            const clientId = documentUrl("/client.json")
            const email = "cimd-person@example.com"
            const connected = yield* connect({ email, ip: "10.79.0.1", clientId })
            const tokens = yield* exchange(clientId, connected.code, connected.verifier)
            assert.strictEqual(tokens.status, 200, JSON.stringify(tokens.json))
            assert.strictEqual((yield* toolsList(tokens.json.access_token)).status, 200)
            const management = yield* signIn(app, email, { ip: "10.79.0.2" })
            const apps = yield* app.call("/v1/apps", { key: management.management_token })
            assert.strictEqual(apps.body.apps[0].client_name, "Metadata Agent")
            assert.strictEqual(apps.body.apps[0].redirect_host, "127.0.0.1:9")
            // Authorization, consent, approval and token exchange all used one fetched copy; so does
            // another person's sign-in with the same client.
            assert.strictEqual(requestsFor("/client.json"), 1)
            assert.strictEqual((yield* authorize(baseUrl, clientId, "10.79.0.3")).status, 303)
            assert.strictEqual(requestsFor("/client.json"), 1)
          })
      )

      it.effect(
        "a redirect is not followed, a document over 5 KiB is refused, plain http redirect URIs too",
        () =>
          Effect.gen(function* () {
            for (const path of ["/redirect.json", "/big.json", "/plain-http.json"]) {
              const refused = yield* authorize(baseUrl, documentUrl(path), "10.79.1.1")
              assert.strictEqual(refused.status, 400, `${path}: ${refused.text}`)
              assert.isUndefined(refused.location, path)
              assert.include(refused.text, "Could not connect the app", path)
            }
            assert.strictEqual(requestsFor("/redirect.json"), 1)
            assert.strictEqual(requestsFor("/client.json"), 1, "the redirect's target was never asked for")
          })
      )

      it.effect("at most 10 document fetches per IP per 15 minutes; the 11th opens no connection", () =>
        Effect.gen(function* () {
          const limit = defaultPolicy.oauth.clientFetchesPerIp
          for (let i = 0; i < limit; i++) {
            // Unknown documents are not cached: each one is a fetch.
            const missing = yield* authorize(baseUrl, documentUrl(`/missing-${i}.json`), "10.79.2.1")
            assert.strictEqual(missing.status, 400, missing.text)
          }
          const connections = documents.connections()
          const refused = yield* authorize(baseUrl, documentUrl("/missing-last.json"), "10.79.2.1")
          assert.strictEqual(refused.status, 429, refused.text)
          assert.isUndefined(refused.location)
          assert.include(refused.text, "temporarily_unavailable")
          assert.include(refused.text, `made ${limit} client metadata document fetches`)
          assert.strictEqual(documents.connections(), connections)
          assert.strictEqual(requestsFor("/missing-last.json"), 0)
          // Another address fetches; a cached document needs no fetch at all.
          assert.strictEqual(
            (yield* authorize(baseUrl, documentUrl("/missing-last.json"), "10.79.2.2")).status,
            400
          )
          assert.strictEqual(
            (yield* authorize(baseUrl, documentUrl("/client.json"), "10.79.2.1")).status,
            303
          )
        })
      )
    }
  )
})

describe(`metadata documents on loopback and private addresses, by default (${storeName})`, async () => {
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  layer(testApp(testOperations, { port, baseUrl }), { timeout: 60_000 })((it) => {
    it.effect("are refused before any connection: no open port shows in the answer or its time", () =>
      Effect.gen(function* () {
        const connections = documents.connections()
        const closed = yield* Effect.promise(freePort)
        const refusedUrls = [
          documentUrl("/client.json", "localhost"),
          documentUrl("/client.json", "127.0.0.1"),
          documentUrl("/client.json", "[::1]"),
          documentUrl("/client.json", "[::ffff:127.0.0.1]"),
          `https://127.0.0.1:${closed}/client.json`,
          "https://169.254.169.254/latest/meta-data.json",
          "https://10.0.0.1/client.json",
          "https://100.64.0.1/client.json",
          "https://0.0.0.0/client.json"
        ]
        for (const [index, clientId] of refusedUrls.entries()) {
          const started = performance.now()
          const refused = yield* authorize(baseUrl, clientId, `10.79.3.${index + 1}`)
          assert.strictEqual(refused.status, 400, `${clientId}: ${refused.text}`)
          assert.include(refused.text, "Could not connect the app")
          assert.isBelow(performance.now() - started, 1000, clientId)
        }
        assert.strictEqual(documents.connections(), connections)
      })
    )
  })
})
