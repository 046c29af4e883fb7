import { assert, describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { operatorHeaders } from "../support/metrics.ts"
import { testOperations } from "../support/testOperations.ts"

const adminToken = "test-admin-token-7f3a9c2e5b8d1f4a6c"
const policy = { ...defaultPolicy, operatorAuthFailuresPerIp: { limit: 3, windowMs: 60_000 } }

/** One `live` procedure (it reads the pause flag and changes nothing) with `token`, from `ip`. */
const rpc = (token: string, ip: string) =>
  Effect.flatMap(TestApp, (app) =>
    app.call("/admin/rpc", {
      method: "POST",
      ip,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ _tag: "Request", id: "1", tag: "live", payload: {}, headers: [] })
    })
  )

const metrics = (token: string, ip: string) =>
  Effect.flatMap(TestApp, (app) =>
    app.call("/metrics", { ip, headers: { authorization: `Bearer ${token}` } })
  )

/** Audit 2: failed admin and metrics tokens were never throttled, and the admin token opened /metrics. */
describe(`operator tokens (${storeName})`, () => {
  layer(testApp(testOperations, { policy }), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("wrong admin tokens are throttled per IP: RATE_LIMITED, then even the right one waits", () =>
      Effect.gen(function* () {
        const ip = "10.66.1.1"
        assert.strictEqual((yield* rpc(adminToken, ip)).status, 200)
        for (let n = 0; n < 3; n++) {
          const wrong = yield* rpc(`wrong-${n}`, ip)
          assert.strictEqual(wrong.status, 401, JSON.stringify(wrong.body))
        }
        const limited = yield* rpc("wrong-again", ip)
        assert.strictEqual(limited.status, 429, JSON.stringify(limited.body))
        assert.strictEqual(limited.body.code, "RATE_LIMITED")
        assert.isAbove(limited.body.retry_after_seconds, 0)
        // Past the limit nothing is compared from that address, not even the right token.
        assert.strictEqual((yield* rpc(adminToken, ip)).status, 429)
        // Another address is not held back.
        assert.strictEqual((yield* rpc(adminToken, "10.66.1.2")).status, 200)
      })
    )

    it.effect("wrong metrics tokens are throttled per IP; the admin token does not open /metrics", () =>
      Effect.gen(function* () {
        const ip = "10.66.2.1"
        const metricsToken = operatorHeaders.authorization.slice("Bearer ".length)
        assert.strictEqual((yield* metrics(metricsToken, ip)).status, 200)
        assert.strictEqual(
          (yield* metrics(adminToken, ip)).status,
          401,
          "the operator token is not the metrics token"
        )
        for (let n = 0; n < 2; n++) assert.strictEqual((yield* metrics(`wrong-${n}`, ip)).status, 401)
        const limited = yield* metrics(metricsToken, ip)
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.body.code, "RATE_LIMITED")
        assert.strictEqual((yield* metrics(metricsToken, "10.66.2.2")).status, 200)
      })
    )
  })

  layer(testApp(testOperations, { metricsToken: Option.none() }), {
    timeout: 60_000,
    excludeTestServices: true
  })((it) => {
    it.effect("without METRICS_TOKEN, /metrics on PORT opens to no token, the operator's included", () =>
      Effect.gen(function* () {
        const refused = yield* metrics(adminToken, "10.66.3.1")
        assert.strictEqual(refused.status, 401)
        assert.include(refused.body.message, "METRICS_TOKEN")
      })
    )
  })
})
