import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

describe(`API answers are never cached (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("a minted key, usage, a problem and a sign-in start all say Cache-Control: no-store", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.63.0.1"
        const mint = yield* app.call("/v1/keys/mint", { method: "POST", ip })
        assert.strictEqual(mint.headers.get("cache-control"), "no-store")
        const usage = yield* app.call("/v1/usage", { key: mint.body.key, ip })
        assert.strictEqual(usage.headers.get("cache-control"), "no-store")
        const problem = yield* app.call("/v1/usage", { ip })
        assert.strictEqual(problem.status, 401)
        assert.strictEqual(problem.headers.get("cache-control"), "no-store")
        const start = yield* app.call("/v1/auth/email/start", {
          method: "POST",
          ip,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email: "cache@example.com" })
        })
        assert.strictEqual(start.status, 202)
        assert.strictEqual(start.headers.get("cache-control"), "no-store")
      })
    )
  })
})
