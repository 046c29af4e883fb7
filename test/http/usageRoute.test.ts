import { request } from "node:http"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Usage } from "../../src/contract/schemas.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

/** A GET that announces a body (`Content-Length`) it never sends: refused before anything reads it. */
const getAnnouncing = (url: string, path: string, length: number, key: string) =>
  Effect.promise(
    () =>
      new Promise<{ status: number; body: any }>((resolve, reject) => {
        const sent = request(`${url}${path}`, {
          method: "GET",
          headers: { authorization: `Bearer ${key}`, "content-length": String(length) }
        })
        sent.on("response", (response) => {
          let text = ""
          response.setEncoding("utf8")
          response.on("data", (chunk: string) => {
            text += chunk
          })
          response.on("end", () => {
            resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) })
            sent.destroy()
          })
        })
        sent.on("error", reject)
        sent.flushHeaders()
      })
  )

/**
 * `GET /v1/usage` is served by a wire adapter on the router rather than the HttpApi (which copies
 * the service's context on every request): it must answer exactly as the HttpApi's middlewares and
 * encoding did for the usage group.
 */
describe(`GET /v1/usage, served beside the HttpApi (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "answers in the contract's order, bearer first, then the query's characters, then the body's size",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.64.0.1"
          const { key, account_id } = yield* app.mint(ip)

          const usage = yield* app.call("/v1/usage", { key, ip })
          assert.strictEqual(usage.status, 200)
          assert.strictEqual(usage.headers.get("content-type"), "application/json")
          assert.strictEqual(usage.headers.get("cache-control"), "no-store")
          assert.strictEqual(usage.body.account_id, account_id)
          assert.strictEqual(usage.body.plan, "trial")
          assert.strictEqual(usage.body.free_tier.ip, ip)
          // The members in the order of the contract's schema, as the HttpApi's encoding wrote them.
          const order = Object.keys(Usage.fields).filter((name) => name in usage.body)
          assert.deepStrictEqual(Object.keys(usage.body), order)

          // No key, or another scheme: KEY_REQUIRED, before the query is looked at.
          for (const headers of [{}, { authorization: `Basic ${key}` }]) {
            const refused = yield* app.call("/v1/usage?x=a%01b", { ip, headers })
            assert.strictEqual(refused.status, 401)
            assert.strictEqual(refused.body.code, "KEY_REQUIRED")
            assert.strictEqual(refused.headers.get("cache-control"), "no-store")
          }
          const unknown = yield* app.call("/v1/usage", { key: `${key}x`, ip })
          assert.strictEqual(unknown.status, 401)
          assert.strictEqual(unknown.body.code, "UNAUTHORIZED")

          // With a key, a control character in any query parameter is INVALID_INPUT naming it.
          const control = yield* app.call("/v1/usage?note=a%01b", { key, ip })
          assert.strictEqual(control.status, 400)
          assert.strictEqual(control.body.code, "INVALID_INPUT")
          assert.strictEqual(control.body.param, "note")
          // Other query parameters are ignored, as the contract declares none.
          const ignored = yield* app.call("/v1/usage?note=hello", { key, ip })
          assert.strictEqual(ignored.status, 200)

          const tooLarge = yield* getAnnouncing(app.url, "/v1/usage", 10 * 1024 * 1024, key)
          assert.strictEqual(tooLarge.status, 413)
          assert.strictEqual(tooLarge.body.code, "PAYLOAD_TOO_LARGE")
        })
    )
  })
})
