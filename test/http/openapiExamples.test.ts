import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { sampleQuery } from "../../bench/responseExamples.ts"
import { responseExamples } from "../../src/contract/examples/index.ts"
import { operations } from "../../src/operations/registry.ts"
import { layerWorld, UpstreamFaults } from "../../src/upstream/Upstream.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"

/** The world a service started with no configuration simulates, which the examples are taken from. */
const defaultWorld = layerWorld("svc-world-1").pipe(Layer.provideMerge(UpstreamFaults.layer))
const freshIp = ipSequence("10.61")

describe(`OpenAPI parameter and response examples (${storeName})`, () => {
  layer(testApp(operations, {}, defaultWorld), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "every data operation's documented example answers 200 with data, on one paid key and on a trial key",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const spec = (yield* app.call("/v1/openapi.json")).body
          const data = Object.entries(spec.paths as Record<string, any>).filter(([path]) =>
            /^\/v1\/(profnet|forum|microblog)\//.test(path)
          )
          assert.strictEqual(data.length, 17)
          // A paid key must send the header (each sample's own, so trying several is not a reuse); a trial key
          // draws on its IP's free budget, which the 17 samples stay within.
          const paid = yield* paidKey(freshIp(), 1_000)
          const trialIp = freshIp()
          const trial = { ...(yield* app.mint(trialIp)), ip: trialIp }
          for (const [path, item] of data)
            for (const { key, ip } of [paid, trial]) {
              const operation = item.get
              const header = operation.parameters.find(
                (parameter: any) => parameter.name === "Idempotency-Key"
              )
              const reply = yield* app.call(`${path}?${sampleQuery(operation.parameters)}`, {
                key,
                ip,
                idempotencyKey: header.example
              })
              assert.strictEqual(reply.status, 200, `${operation.operationId}: ${JSON.stringify(reply.body)}`)
              assert.isNotNull(reply.body.data, operation.operationId)
            }
        })
    )

    it.effect("the served document's response examples name the service's own base and upgrade URLs", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const spec = (yield* app.call("/v1/openapi.json")).body
        const answer = (operation: any) =>
          operation.responses["200"].content["application/json"].examples.answer.value
        const mint = answer(spec.paths["/v1/keys/mint"].post)
        assert.strictEqual(mint.docs, "http://svc.test/docs")
        assert.strictEqual(mint.upgrade_url, `http://svc.test/upgrade?account=${mint.account_id}`)
        assert.deepStrictEqual(
          answer(spec.paths["/v1/profnet/profiles"].get),
          responseExamples.data.getProfile
        )
        const keyRequired = spec.components.examples.ProblemKeyRequired.value
        assert.strictEqual(keyRequired.mint.url, "http://svc.test/v1/keys/mint")
        assert.strictEqual(keyRequired.doc_url, "http://svc.test/docs/errors#KEY_REQUIRED")
        assert.notInclude(JSON.stringify(spec), "127.0.0.1")
      })
    )
  })
})
