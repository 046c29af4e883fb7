import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { layerWorld, UpstreamFaults } from "../../src/upstream/Upstream.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"

/** The world a service started with no configuration simulates, which the examples are taken from. */
const defaultWorld = layerWorld("svc-world-1").pipe(Layer.provideMerge(UpstreamFaults.layer))
const freshIp = ipSequence("10.61")

/** A query string from the parameters' examples, as the docs' request samples send it. */
const exampleQuery = (parameters: ReadonlyArray<any>) =>
  parameters
    .filter((parameter) => parameter.in === "query" && parameter.example !== undefined)
    .map((parameter) => {
      const value = Array.isArray(parameter.example) ? parameter.example.join(",") : String(parameter.example)
      return `${parameter.name}=${encodeURIComponent(value)}`
    })
    .join("&")

describe(`OpenAPI parameter examples (${storeName})`, () => {
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
              const reply = yield* app.call(`${path}?${exampleQuery(operation.parameters)}`, {
                key,
                ip,
                idempotencyKey: header.example
              })
              assert.strictEqual(reply.status, 200, `${operation.operationId}: ${JSON.stringify(reply.body)}`)
              assert.isNotNull(reply.body.data, operation.operationId)
            }
        })
    )
  })
})
