import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

describe(`a known path with the wrong method (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("is NOT_FOUND naming the method it takes, with Allow; an unknown path is plain NOT_FOUND", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const mint = yield* app.call("/v1/keys/mint")
        assert.strictEqual(mint.status, 404)
        assert.strictEqual(mint.body.code, "NOT_FOUND")
        assert.include(mint.body.message, "POST /v1/keys/mint")
        assert.strictEqual(mint.headers.get("allow"), "POST")
        const receipt = yield* app.call("/v1/receipts/rcpt_x", { method: "DELETE" })
        assert.strictEqual(receipt.status, 404)
        assert.strictEqual(receipt.headers.get("allow"), "GET")
        const unknown = yield* app.call("/v1/nope")
        assert.strictEqual(unknown.status, 404)
        assert.isNull(unknown.headers.get("allow"))
        assert.include(unknown.body.message, "No such route")
      })
    )
  })
})
