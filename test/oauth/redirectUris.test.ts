import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { redirectUriRefusal } from "../../src/oauth/policy.ts"
import { testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { freePort } from "./support.ts"

const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`

/** A dynamic registration (RFC 7591) with these redirect URIs; the status and body. */
const registerWith = (redirectUris: ReadonlyArray<string>, extra: Record<string, unknown> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}/oauth/register`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-forwarded-for": `10.95.${Math.floor(Math.random() * 250)}.1`
      },
      body: JSON.stringify({
        client_name: "Redirect Agent",
        redirect_uris: redirectUris,
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        ...extra
      })
    })
    return { status: response.status, body: (await response.json()) as any }
  })

describe("the redirect URI rule", () => {
  it("https anywhere, http on loopback only, custom schemes for native clients", () => {
    for (const ok of [
      "https://app.example/callback",
      "http://127.0.0.1:8080/callback",
      "http://localhost:3000/cb",
      "http://[::1]:9/cb"
    ])
      assert.isUndefined(redirectUriRefusal(ok, "web"), ok)
    for (const refused of [
      "http://app.example/callback",
      "http://10.0.0.5/cb",
      "http://127.0.0.2/cb",
      "http://localhost.evil.example/cb",
      "http://127.0.0.1.nip.io/cb",
      "com.example.app:/callback",
      "javascript:alert(1)",
      "not a url"
    ])
      assert.isString(redirectUriRefusal(refused, "web"), refused)
    assert.isUndefined(redirectUriRefusal("com.example.app:/callback", "native"))
  })
})

describe(`dynamic registration's redirect URIs (${storeName})`, () => {
  layer(testApp(testOperations, { port, baseUrl }), { timeout: 60_000 })((it) => {
    it.effect("plain http on a host that is not loopback is invalid_redirect_uri; the rest register", () =>
      Effect.gen(function* () {
        for (const uris of [
          ["http://evil.example/callback"],
          ["http://10.0.0.5/callback"],
          ["http://localhost.evil.example/callback"],
          ["https://app.example/callback", "http://app.example/callback"],
          ["com.example.app:/callback"]
        ]) {
          const refused = yield* registerWith(uris)
          assert.strictEqual(refused.status, 400, JSON.stringify(uris))
          assert.strictEqual(refused.body.error, "invalid_redirect_uri", JSON.stringify(refused.body))
          assert.include(refused.body.error_description, uris.at(-1)!)
        }
        for (const uris of [
          ["https://app.example/callback"],
          ["http://127.0.0.1:8080/callback"],
          ["http://localhost:3000/callback"],
          ["http://[::1]:9/callback"]
        ]) {
          const registered = yield* registerWith(uris)
          assert.strictEqual(registered.status, 201, JSON.stringify(registered.body))
          assert.deepStrictEqual(registered.body.redirect_uris, uris)
        }
        // A native app's own scheme, as before.
        const native = yield* registerWith(["com.example.app:/callback"], { application_type: "native" })
        assert.strictEqual(native.status, 201, JSON.stringify(native.body))
      })
    )
  })
})
