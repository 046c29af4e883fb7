import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { errorCatalog } from "../../src/contract/errors.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const problemFields = ["type", "title", "status", "detail", "code", "message", "is_retriable", "doc_url"]

describe(`foundation (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("answers readiness and liveness", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        assert.strictEqual((yield* app.call("/readyz")).status, 200)
        assert.strictEqual((yield* app.call("/healthz")).status, 200)
      })
    )

    it.effect("mints a trial key with every field of the contract, stored only as a hash", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const reply = yield* app.call("/v1/keys/mint", { method: "POST", ip: "10.0.0.1" })
        assert.strictEqual(reply.status, 200)
        const body = reply.body
        assert.match(body.key, /^svc_trial_[0-9A-Za-z]{32}$/)
        assert.strictEqual(body.plan, "trial")
        assert.match(body.account_id, /^acct_/)
        assert.isTrue(
          body.key_hint.endsWith(body.key.slice(-4)) && !body.key_hint.includes(body.key.slice(10, 20))
        )
        assert.deepStrictEqual(body.free_tier, {
          credits_per_ip_day: 200,
          freshness: "recent",
          first_page_only: true
        })
        assert.include(body.upgrade_url, body.account_id)
        assert.include(body.setup.env, body.key)
        assert.include(body.setup.rest, `Bearer ${body.key}`)
        assert.strictEqual(body.setup.mcp.url, "http://svc.test/mcp")
        assert.strictEqual(body.setup.mcp.headers.Authorization, `Bearer ${body.key}`)
        for (const field of ["note", "docs"]) assert.isString(body[field])
        const usage = yield* app.call("/v1/usage", { key: body.key, ip: "10.0.0.1" })
        assert.strictEqual(usage.status, 200)
      })
    )

    it.effect("limits minting per IP with RATE_LIMITED and retry_after_seconds, per IP only", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (let i = 0; i < 5; i++) {
          assert.strictEqual(
            (yield* app.call("/v1/keys/mint", { method: "POST", ip: "10.0.1.1" })).status,
            200
          )
        }
        const limited = yield* app.call("/v1/keys/mint", { method: "POST", ip: "10.0.1.1" })
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.body.code, "RATE_LIMITED")
        assert.isAbove(limited.body.retry_after_seconds, 0)
        assert.strictEqual(limited.headers.get("content-type"), "application/problem+json")
        assert.strictEqual((yield* app.call("/v1/keys/mint", { method: "POST", ip: "10.0.1.2" })).status, 200)
      })
    )

    it.effect("reports the trial key's usage with the free-tier block and claim_url", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, account_id } = yield* app.mint("10.0.2.1")
        const reply = yield* app.call("/v1/usage", { key, ip: "10.0.2.1" })
        assert.strictEqual(reply.status, 200)
        assert.strictEqual(reply.body.account_id, account_id)
        assert.strictEqual(reply.body.plan, "trial")
        assert.deepStrictEqual(reply.body.platforms, ["profnet", "forum", "microblog"])
        assert.strictEqual(reply.body.free_tier.credits_per_ip_day, 200)
        assert.strictEqual(reply.body.free_tier.remaining_today, 200)
        assert.strictEqual(reply.body.free_tier.ip, "10.0.2.1")
        assert.include(reply.body.claim_url, account_id)
        assert.include(reply.body.upgrade_url, account_id)
        assert.isUndefined(reply.body.balance)
      })
    )

    it.effect("KEY_REQUIRED without a key, with the minting recipe", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const reply = yield* app.call("/v1/usage")
        assert.strictEqual(reply.status, 401)
        assert.strictEqual(reply.body.code, "KEY_REQUIRED")
        assert.strictEqual(reply.body.mint.url, "http://svc.test/v1/keys/mint")
        for (const field of problemFields) assert.property(reply.body, field)
      })
    )

    it.effect("UNAUTHORIZED for a malformed or unknown key", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (const key of ["nope", "svc_trial_0000000000000000000000000000000A", "svcm_x"]) {
          const reply = yield* app.call("/v1/usage", { key })
          assert.strictEqual(reply.status, 401)
          assert.strictEqual(reply.body.code, "UNAUTHORIZED")
        }
      })
    )

    it.effect("unknown routes and methods are NOT_FOUND problems", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (const [method, path] of [
          ["GET", "/v1/nope"],
          ["GET", "/v1/keys/mint"],
          ["DELETE", "/v1/usage"],
          ["POST", "/"]
        ] as const) {
          const reply = yield* app.call(path, { method })
          assert.strictEqual(reply.status, 404, `${method} ${path}`)
          assert.strictEqual(reply.body.code, "NOT_FOUND")
          assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
          assert.strictEqual(reply.body.doc_url, "http://svc.test/docs/errors#NOT_FOUND")
        }
      })
    )

    it.effect("a malformed query parameter is INVALID_INPUT naming it, after authentication", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key } = yield* app.mint()
        const bad = yield* app.call("/v1/receipts?limit=abc", { key })
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.body.code, "INVALID_INPUT")
        assert.strictEqual(bad.body.param, "limit")
        const unauthenticated = yield* app.call("/v1/receipts?limit=abc")
        assert.strictEqual(unauthenticated.body.code, "KEY_REQUIRED")
      })
    )

    it.effect("a body over the size limit is PAYLOAD_TOO_LARGE", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const reply = yield* app.call("/v1/keys/mint", {
          method: "POST",
          body: "x".repeat(70 * 1024),
          ip: "10.0.3.1"
        })
        assert.strictEqual(reply.status, 413)
        assert.strictEqual(reply.body.code, "PAYLOAD_TOO_LARGE")
      })
    )

    it.effect(
      "a defect is INTERNAL naming the call's receipt id, with no stack trace, and charges nothing",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.77.0.1"
          const { key } = yield* app.mint(ip)
          const reply = yield* app.call("/v1/profnet/test-echo?value=x&fail=defect", { key, ip })
          assert.strictEqual(reply.status, 500)
          assert.strictEqual(reply.body.code, "INTERNAL")
          assert.isTrue(reply.body.is_retriable)
          assert.match(reply.body.receipt_id, /^rcpt_[0-9A-Za-z]+$/)
          assert.include(reply.body.message, reply.body.receipt_id)
          assert.notInclude(JSON.stringify(reply.body), "at ")
          assert.strictEqual((yield* app.call("/v1/usage", { key, ip })).body.free_tier.used_today, 0)
        })
    )

    it.effect("a defect outside a metered call is INTERNAL with a trace id", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key } = yield* app.mint()
        const reply = yield* app.call("/v1/profnet/test-echo?value=defect-in-prepare", { key })
        assert.strictEqual(reply.status, 500)
        assert.strictEqual(reply.body.code, "INTERNAL")
        assert.match(reply.body.message, /trace_[0-9A-Za-z]+/)
        assert.isUndefined(reply.body.receipt_id)
      })
    )

    it.effect("serves OpenAPI 3.1 with the contract's operationIds, the docs page and the error page", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const spec = (yield* app.call("/v1/openapi.json")).body
        assert.match(spec.openapi, /^3\.1/)
        const ids = Object.values(spec.paths).flatMap((item: any) =>
          Object.values(item).map((op: any) => op.operationId)
        )
        for (const id of ["mintKey", "get_usage", "listReceipts", "getReceipt", "testEcho"])
          assert.include(ids, id)
        assert.property(spec.paths, "/v1/keys/mint")
        // A lower-case `bearer` http scheme: the docs page then builds `Authorization: Bearer ...`.
        assert.deepStrictEqual(
          {
            type: spec.components.securitySchemes.bearer.type,
            scheme: spec.components.securitySchemes.bearer.scheme
          },
          { type: "http", scheme: "bearer" }
        )
        assert.deepStrictEqual(
          spec.servers.map((server: any) => server.url),
          ["http://svc.test"]
        )
        for (const item of Object.values(spec.paths))
          for (const op of Object.values(item as Record<string, any>))
            assert.isString(op.summary, op.operationId)
        assert.notInclude(JSON.stringify(spec), String(Number.MIN_SAFE_INTEGER))
        const docs = yield* app.call("/docs")
        assert.strictEqual(docs.status, 200)
        assert.notMatch(docs.body, /<script[^>]+src="http/)
        const errors = yield* app.call("/docs/errors")
        for (const code of Object.keys(errorCatalog)) assert.include(errors.body, `id="${code}"`)
      })
    )

    it.effect("takes the client IP from X-Forwarded-For only behind a trusted proxy", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key } = yield* app.mint("10.0.4.1")
        const reply = yield* app.call("/v1/usage", { key, ip: "198.51.100.7, 10.0.4.1" })
        assert.strictEqual(reply.body.free_tier.ip, "10.0.4.1")
      })
    )
  })
})
