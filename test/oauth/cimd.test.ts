import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { flows } from "./flows.ts"
import { freePort } from "./support.ts"

const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const redirectUri = "http://127.0.0.1:9/callback"
const { connect, exchange, toolsList } = flows(baseUrl, redirectUri)

/**
 * A Client ID Metadata Document (the client id is an https URL the server fetches). The server
 * fetches through `globalThis.fetch`; this file answers that one URL itself.
 */
const clientId = "https://agent.example/oauth/client.json"
const document = {
  client_id: clientId,
  client_name: "Metadata Agent",
  redirect_uris: [redirectUri],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none"
}
const realFetch = globalThis.fetch
globalThis.fetch = (input, init) =>
  String(input instanceof Request ? input.url : input) === clientId
    ? Promise.resolve(
        new Response(JSON.stringify(document), {
          headers: { "content-type": "application/json", "cache-control": "max-age=60" }
        })
      )
    : realFetch(input, init)

describe(`a client identified by its metadata document (${storeName})`, () => {
  layer(testApp(testOperations, { port, baseUrl }), { timeout: 60_000 })((it) => {
    it.effect("no registration: sign-in, consent naming the document's client, a token that works", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const email = "cimd-person@example.com"
        const connected = yield* connect({ email, ip: "10.79.0.1", clientId })
        const tokens = yield* exchange(clientId, connected.code, connected.verifier)
        assert.strictEqual(tokens.status, 200, JSON.stringify(tokens.json))
        assert.strictEqual((yield* toolsList(tokens.json.access_token)).status, 200)
        const management = yield* signIn(app, email, { ip: "10.79.0.2" })
        const apps = yield* app.call("/v1/apps", { key: management.management_token })
        assert.strictEqual(apps.body.apps[0].client_name, "Metadata Agent")
        assert.strictEqual(apps.body.apps[0].redirect_host, "127.0.0.1:9")
      })
    )
  })
})
