import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { makeApi } from "../../src/contract/api.ts"
import { InvalidInput, KeyRequired, NotFound, TrialCapExceeded } from "../../src/contract/errors.ts"
import { declarations } from "../../src/contract/operations/index.ts"
import { operations } from "../../src/operations/registry.ts"
import { makeWorld } from "../../src/upstream/world/index.ts"
import { TestApp, testApp, testSeed } from "../support/app.ts"
import { storeName } from "../support/database.ts"

/**
 * The contract is enough to call the service: `HttpApiClient.make` over the `/v1` HttpApi built from
 * the declarations knows every data endpoint, its parameters, its envelope and its errors, and a
 * problem document comes back as the error class of its code.
 */
const world = makeWorld(testSeed)
const someone = (() => {
  const page = world.searchPeople({ keywords: "engineer" }, undefined, 10)
  if (page === "invalid_cursor" || page.items[0] === undefined)
    throw new Error("the test world has no engineer")
  return page.items[0]
})()

const clientFor = (key: string | undefined) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    return yield* HttpApiClient.make(makeApi(declarations), {
      baseUrl: app.url,
      transformClient: (client) =>
        key === undefined ? client : HttpClient.mapRequest(client, HttpClientRequest.bearerToken(key))
    })
  }).pipe(Effect.provide(FetchHttpClient.layer))

describe(`a typed client derived from the contract (${storeName})`, () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("calls a data operation and gets its typed envelope", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key } = yield* app.mint("10.66.0.1")
        const client = yield* clientFor(key)
        const envelope = yield* client.getProfile({
          query: { identifier: someone.public_identifier!, sections: ["about"] },
          headers: {}
        })
        assert.strictEqual(envelope.kind, "person")
        assert.strictEqual(envelope.schema_version, 2)
        assert.strictEqual(envelope.cost.charged, 4)
        assert.isString(envelope.receipt.id)
        const usage = yield* client.getUsage()
        assert.strictEqual(usage.today.credits, 4)
      })
    )

    it.effect("gets each problem back as the error class of its code, with its fields", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, account_id } = yield* app.mint("10.66.0.2")
        const client = yield* clientFor(key)

        const invalid = yield* Effect.flip(
          client.getProfile({ query: { identifier: "no such/shape!" }, headers: {} })
        )
        assert.instanceOf(invalid, InvalidInput)
        assert.strictEqual(invalid._tag, "InvalidInput")
        if (invalid._tag === "InvalidInput") {
          assert.strictEqual(invalid.code, "INVALID_INPUT")
          assert.strictEqual(invalid.param, "identifier")
          assert.match(invalid.doc_url ?? "", /\/docs\/errors#INVALID_INPUT$/)
        }

        const missing = yield* Effect.flip(
          client.getProfile({ query: { identifier: "nobody-here-zz9zz9zz" }, headers: {} })
        )
        assert.instanceOf(missing, NotFound)

        const capped = yield* Effect.flip(
          client.getProfile({
            query: { identifier: someone.public_identifier!, freshness: "realtime" },
            headers: {}
          })
        )
        assert.instanceOf(capped, TrialCapExceeded)
        if (capped._tag === "TrialCapExceeded") {
          assert.strictEqual(capped.param, "freshness")
          // A free key's error carries the public upgrade link; the offer's checkout credits this key.
          assert.strictEqual(capped.upgrade_url, "http://svc.test/upgrade")
          assert.strictEqual(capped.offer?.checkout_url, `http://svc.test/upgrade?account=${account_id}`)
          assert.strictEqual(capped.offer?.reason, "TRIAL_CAP_EXCEEDED")
        }

        const anonymous = yield* clientFor(undefined)
        const keyless = yield* Effect.flip(anonymous.getUsage())
        assert.instanceOf(keyless, KeyRequired)
        if (keyless._tag === "KeyRequired") assert.match(keyless.mint?.url ?? "", /\/v1\/keys\/mint$/)
      })
    )
  })
})
