import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { post } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { pay } from "./support.ts"

describe(`checkout on the local rail (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "a keyed flex checkout credits the same key once, even paid twice; the plan changes at once",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.62.0.1"
          const minted = yield* app.mint(ip)
          const started = yield* post(app, "/v1/checkout", { pack: "flex" }, { key: minted.key, ip })
          assert.strictEqual(started.status, 200, JSON.stringify(started.body))
          assert.strictEqual(started.body.rail, "local")
          assert.strictEqual(started.body.credits, 10_000)
          const open = yield* app.call(`/v1/checkout/${started.body.session_id}`)
          assert.strictEqual(open.body.status, "open")
          const paid = yield* pay(app, started.body.checkout_url)
          assert.strictEqual(paid.status, 303)
          assert.strictEqual(paid.location, started.body.checkout_url)
          yield* pay(app, started.body.checkout_url)
          const read = yield* app.call(`/v1/checkout/${started.body.session_id}`)
          assert.strictEqual(read.body.status, "paid")
          assert.strictEqual(read.body.account_id, minted.account_id)
          assert.isUndefined(read.body.api_key)
          const usage = yield* app.call("/v1/usage", { key: minted.key, ip })
          assert.strictEqual(usage.body.plan, "flex")
          assert.strictEqual(usage.body.balance.purchased, 10_000)
        })
    )

    it.effect("a keyless checkout shows its new key in the first read after payment only", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const started = yield* post(app, "/v1/checkout", { pack: "production" }, { ip: "10.62.0.2" })
        assert.strictEqual(started.status, 200, JSON.stringify(started.body))
        assert.strictEqual(started.body.credits_per_month, 75_000)
        yield* pay(app, started.body.checkout_url)
        const first = yield* app.call(`/v1/checkout/${started.body.session_id}`)
        assert.match(first.body.api_key, /^svc_[0-9A-Za-z]{32}$/)
        const second = yield* app.call(`/v1/checkout/${started.body.session_id}`)
        assert.isUndefined(second.body.api_key)
        const usage = yield* app.call("/v1/usage", { key: first.body.api_key, ip: "10.62.0.2" })
        assert.strictEqual(usage.body.plan, "production")
        assert.strictEqual(usage.body.balance.purchased, 75_000)
      })
    )

    it.effect("unknown pack or rail is INVALID_INPUT with param; unknown session NOT_FOUND", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const pack = yield* post(app, "/v1/checkout", { pack: "gold" })
        assert.strictEqual(pack.status, 400)
        assert.strictEqual(pack.body.param, "pack")
        const rail = yield* post(app, "/v1/checkout", { pack: "flex", rail: "paypal" })
        assert.strictEqual(rail.status, 400)
        assert.strictEqual(rail.body.param, "rail")
        const unknown = yield* app.call(`/v1/checkout/cs_${"a".repeat(43)}`)
        assert.strictEqual(unknown.status, 404)
      })
    )
  })
})
