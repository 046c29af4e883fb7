/**
 * `npm run examples`: the OpenAPI response examples, as real answers of the service. Starts the
 * service in-process as one started with no configuration would run (the simulated world
 * `svc-world-1`, the default address, hosts, policy and offers; the database in memory), mints a
 * trial key, sends every data operation's documented request sample with it (its parameters'
 * examples and its Idempotency-Key example, as the docs' samples send them), reads the key's usage
 * and receipts, and writes the answers to `src/contract/examples/responses.json`.
 *
 * A run gives the same file every time: the clock starts at `exampleTime` and moves 7 seconds
 * before each request and only then, ids and key secrets come from a seeded hash instead of
 * randomness, and the caller's IP is a documentation address. `test/contract/responseExamples.test.ts`
 * runs it again and compares.
 */
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Clock, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { OpenApi } from "effect/http-api"
import { AppConfig } from "../src/config.ts"
import { makeApi } from "../src/contract/api.ts"
import type { ResponseExamples } from "../src/contract/examples/index.ts"
import { defaultPublication } from "../src/contract/openapi.ts"
import { declarations } from "../src/contract/operations/index.ts"
import { defaultPolicy } from "../src/domain/policy.ts"
import { encodeBase62 } from "../src/domain/secrets.ts"
import { operations } from "../src/operations/registry.ts"
import { appLayer } from "../src/service.ts"
import { Ids } from "../src/services/Ids.ts"
import * as Database from "../src/store/Database.ts"
import { layerWorld, UpstreamFaults } from "../src/upstream/Upstream.ts"

const exampleWorld = "svc-world-1"
/** When the examples were "taken": the clock starts here and moves only between requests. */
const exampleTime = Date.parse("2026-11-02T09:30:00.000Z")
/** The caller, from the documentation range (RFC 5737), sent as X-Forwarded-For through a loopback proxy. */
const exampleIp = "203.0.113.7"

const responseExamplesPath = fileURLToPath(
  new URL("../src/contract/examples/responses.json", import.meta.url)
)

const digest = (text: string) => createHash("sha256").update(text).digest()

/** Ids and secrets that look like real ones, the same on every run. */
const seededIds = Layer.sync(Ids, () => {
  const counters = new Map<string, number>()
  let secrets = 0
  return Ids.of({
    newId: (prefix) =>
      Effect.sync(() => {
        const n = (counters.get(prefix) ?? 0) + 1
        counters.set(prefix, n)
        return `${prefix}_${encodeBase62(digest(`${exampleWorld}/${prefix}/${n}`)).slice(0, 20)}`
      }),
    secretBytes: Effect.sync(() => {
      secrets++
      return Uint8Array.from(
        Buffer.concat([
          digest(`${exampleWorld}/secret/${secrets}/a`),
          digest(`${exampleWorld}/secret/${secrets}/b`)
        ])
      ).slice(0, 48)
    })
  })
})

/** A clock that reads `time.now` and moves only when the generator moves it; sleeps (housekeeping's) take real time. */
const steppedClock = (live: Clock.Clock, time: { now: number }): Clock.Clock => ({
  ...live,
  currentTimeMillisUnsafe: () => time.now,
  currentTimeMillis: Effect.sync(() => time.now),
  currentTimeNanosUnsafe: () => BigInt(time.now) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => BigInt(time.now) * 1_000_000n),
  sleep: (duration) => live.sleep(duration)
})

/** The caller's pace: each request a few seconds after the one before. */
const secondsBetweenCalls = 7

/** The service as started with no configuration, but in memory, on a random port, behind a loopback proxy. */
const exampleApp = appLayer(operations, Database.pglite(":memory:"), seededIds).pipe(
  Layer.provideMerge(layerWorld(exampleWorld).pipe(Layer.provideMerge(UpstreamFaults.layer))),
  Layer.provide(
    AppConfig.layerTest({
      baseUrl: defaultPublication.baseUrl,
      upgradeUrl: defaultPublication.upgradeUrl,
      checkoutRails: defaultPublication.checkoutRails,
      refundPolicy: defaultPublication.refundPolicy,
      policy: defaultPolicy,
      hosts: defaultPublication.hosts,
      trustedProxies: ["127.0.0.1", "::1"]
    })
  )
)

interface Parameter {
  readonly in?: string
  readonly name?: string
  readonly example?: unknown
}

/** The query string of an operation's documented request sample, from its parameters' examples. */
export const sampleQuery = (parameters: ReadonlyArray<Parameter>) =>
  parameters
    .filter((parameter) => parameter.in === "query" && parameter.example !== undefined)
    .map((parameter) => {
      const value = Array.isArray(parameter.example) ? parameter.example.join(",") : String(parameter.example)
      return `${parameter.name}=${encodeURIComponent(value)}`
    })
    .join("&")

/** The documented request sample of each data operation: path, query and Idempotency-Key. */
export const requestSamples = () => {
  // The unpublished document: its parameters are the published ones, and it needs no stored example.
  const spec = OpenApi.fromApi(makeApi(declarations)) as unknown as {
    readonly paths: Record<
      string,
      { readonly get?: { readonly operationId: string; readonly parameters: ReadonlyArray<Parameter> } }
    >
  }
  return declarations.map((declaration) => {
    const path = `/v1${declaration.path}`
    const parameters = spec.paths[path]?.get?.parameters ?? []
    const header = parameters.find((parameter) => parameter.name === "Idempotency-Key")
    return {
      operationId: declaration.id,
      path,
      query: sampleQuery(parameters),
      idempotencyKey: header?.example as string | undefined
    }
  })
}

/** Runs the samples against a fresh service and answers with what it said. */
export const generateResponseExamples: Effect.Effect<ResponseExamples, unknown> = Effect.suspend(() => {
  const time = { now: exampleTime }
  return sendSamples(time).pipe(Effect.provide(exampleApp), (effect) =>
    Clock.clockWith((live) => Effect.provideService(effect, Clock.Clock, steppedClock(live, time)))
  )
})

const sendSamples = (time: { now: number }) =>
  Effect.gen(function* () {
    const server = yield* HttpServer.HttpServer
    const address = server.address
    const url = "port" in address ? `http://127.0.0.1:${address.port}` : "http://unix"
    const call = (
      path: string,
      init: { readonly method?: string; readonly headers?: Record<string, string> }
    ) =>
      Effect.tryPromise(async () => {
        time.now += secondsBetweenCalls * 1000
        const response = await fetch(`${url}${path}`, {
          method: init.method ?? "GET",
          headers: { "x-forwarded-for": exampleIp, ...init.headers }
        })
        const body = (await response.json()) as unknown
        if (response.status !== 200)
          throw new Error(`${path} answered ${response.status}: ${JSON.stringify(body)}`)
        return body
      })
    const mint = (yield* call("/v1/keys/mint", { method: "POST" })) as {
      readonly key: string
      readonly account_id: string
    }
    const authorization = `Bearer ${mint.key}`
    const data: Record<string, unknown> = {}
    for (const sample of requestSamples())
      data[sample.operationId] = yield* call(`${sample.path}?${sample.query}`, {
        headers: {
          authorization,
          ...(sample.idempotencyKey === undefined ? {} : { "idempotency-key": sample.idempotencyKey })
        }
      })
    const receipts = (yield* call("/v1/receipts?limit=3", { headers: { authorization } })) as {
      readonly receipts: ReadonlyArray<{ readonly id: string }>
    }
    const account = {
      mintKey: mint,
      get_usage: yield* call("/v1/usage", { headers: { authorization } }),
      listReceipts: receipts,
      getReceipt: yield* call(`/v1/receipts/${receipts.receipts[0]?.id}`, { headers: { authorization } })
    }
    return {
      world: exampleWorld,
      baseUrl: defaultPublication.baseUrl,
      account,
      data
    } satisfies ResponseExamples
  })

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const examples = await Effect.runPromise(generateResponseExamples)
  writeFileSync(responseExamplesPath, JSON.stringify(examples, null, 2))
  // Laid out as `npm run lint` wants it (Biome keeps short arrays on one line).
  const biome = fileURLToPath(new URL("../node_modules/.bin/biome", import.meta.url))
  const formatted = spawnSync(biome, ["format", "--write", responseExamplesPath], { encoding: "utf8" })
  if (formatted.status !== 0) throw new Error(`biome format failed: ${formatted.stderr}`)
  console.log(
    `wrote ${Object.keys(examples.data).length} data examples and ${Object.keys(examples.account).join(", ")} to ${responseExamplesPath}`
  )
}
