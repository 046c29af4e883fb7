import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { bearerCredential } from "../../src/identity/authorization.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const freshIp = ipSequence("10.67")

describe("the one reading of Authorization: Bearer", () => {
  it("RFC 9110: the scheme in any case, one or more spaces, then the credential", () => {
    assert.strictEqual(bearerCredential("Bearer svc_abc"), "svc_abc")
    assert.strictEqual(bearerCredential("bearer svc_abc"), "svc_abc")
    assert.strictEqual(bearerCredential("BEARER   svc_abc"), "svc_abc")
    for (const refused of [
      undefined,
      "",
      "Bearer",
      "Bearer ",
      "Bearer   ",
      "Bearer\tsvc_abc",
      "Basic svc_abc",
      "Bearersvc_abc"
    ])
      assert.isUndefined(bearerCredential(refused), String(refused))
  })
})

describe(`every surface reads the bearer the same way (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000 })((it) => {
    it.effect(
      "a data route, the usage route and MCP take a lower-case scheme and several spaces; a tab is no bearer",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          for (const authorization of [`bearer   ${key}`, `BEARER ${key}`]) {
            const data = yield* app.call("/v1/profnet/test-echo?value=x", { ip, headers: { authorization } })
            assert.strictEqual(data.status, 200, JSON.stringify(data.body))
            const usage = yield* app.call("/v1/receipts", { ip, headers: { authorization } })
            assert.strictEqual(usage.status, 200, JSON.stringify(usage.body))
          }
          const tab = { authorization: `Bearer\t${key}` }
          assert.strictEqual(
            (yield* app.call("/v1/profnet/test-echo?value=x", { ip, headers: tab })).body.code,
            "KEY_REQUIRED"
          )
          assert.strictEqual(
            (yield* app.call("/v1/receipts", { ip, headers: tab })).body.code,
            "KEY_REQUIRED"
          )
        })
    )
  })
})
