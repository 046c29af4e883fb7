import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import type { SqlClient } from "effect/sql"
import { AppConfig, type AppConfigShape } from "../../src/config.ts"
import type { Hosts } from "../../src/domain/identifiers/index.ts"
import type { AnyOperation } from "../../src/operations/Operation.ts"
import type { OperationServices } from "../../src/operations/support.ts"
import { X402Facilitator } from "../../src/payments/X402Facilitator.ts"
import { appLayer } from "../../src/service.ts"
import { Ids } from "../../src/services/Ids.ts"
import { layerWorld, type Upstream, UpstreamFaults } from "../../src/upstream/Upstream.ts"
import { freshDatabase } from "./database.ts"

/** The simulated world every test sees unless it brings its own upstream (on other hosts if given). */
export const testSeed = "svc-test-world"
export const worldUpstream = layerWorld(testSeed).pipe(Layer.provideMerge(UpstreamFaults.layer))
const worldOn = (hosts: Hosts | undefined) =>
  hosts === undefined
    ? worldUpstream
    : layerWorld(testSeed, hosts).pipe(Layer.provideMerge(UpstreamFaults.layer))

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
  /** The body as it came. */
  readonly text: string
}

export interface CallOptions {
  readonly method?: string
  readonly key?: string
  /** Sent as X-Forwarded-For; the test server trusts loopback as a proxy, so this is the client IP. */
  readonly ip?: string
  readonly idempotencyKey?: string
  readonly headers?: Record<string, string>
  readonly body?: string
}

/** A running service on a random port, over a fresh database. */
export class TestApp extends Context.Service<
  TestApp,
  {
    readonly url: string
    readonly call: (path: string, options?: CallOptions) => Effect.Effect<Reply>
    readonly mint: (ip?: string) => Effect.Effect<{ readonly key: string; readonly account_id: string }>
  }
>()("test/TestApp") {}

/** Calls and a key minter for the service at `url`, as tests use them. */
export const clientOf = (url: string): TestApp["Service"] => {
  const call = (path: string, options: CallOptions = {}) =>
    Effect.promise(async (): Promise<Reply> => {
      const headers: Record<string, string> = { ...options.headers }
      if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`
      if (options.ip !== undefined) headers["x-forwarded-for"] = options.ip
      if (options.idempotencyKey !== undefined) headers["idempotency-key"] = options.idempotencyKey
      const response = await fetch(`${url}${path}`, {
        method: options.method ?? "GET",
        headers,
        ...(options.body === undefined ? {} : { body: options.body })
      })
      const text = await response.text()
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {}
      return { status: response.status, headers: response.headers, body, text }
    })
  const mint = (ip = `10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`) =>
    Effect.map(call("/v1/keys/mint", { method: "POST", ip }), (reply) => {
      if (reply.status !== 200) throw new Error(`mint failed: ${reply.status} ${JSON.stringify(reply.body)}`)
      return reply.body as { key: string; account_id: string }
    })
  return { url, call, mint }
}

export const testApp = (
  operations: ReadonlyArray<AnyOperation<OperationServices>>,
  config: Partial<AppConfigShape> = {},
  upstream: Layer.Layer<Upstream | UpstreamFaults> = worldOn(config.hosts),
  /** Who verifies and settles x402 payments: the configured facilitator, or a test's. */
  facilitator: Layer.Layer<X402Facilitator, never, AppConfig> = X402Facilitator.layer
): Layer.Layer<TestApp | Upstream | UpstreamFaults | Layer.Success<ReturnType<typeof appLayer>>, unknown> =>
  Layer.effect(
    TestApp,
    Effect.gen(function* () {
      const server = yield* HttpServer.HttpServer
      const address = server.address
      const url = "port" in address ? `http://127.0.0.1:${address.port}` : "http://unix"
      return TestApp.of(clientOf(url))
    })
  ).pipe(
    // Ids counted from 1 per app (one app per database), so a test can name the ids it expects.
    Layer.provideMerge(appLayer(operations, freshDatabase, Ids.layerTest, facilitator)),
    Layer.provideMerge(upstream),
    Layer.provide(AppConfig.layerTest({ trustedProxies: ["127.0.0.1", "::1"], ...config }))
  )

/**
 * One more whole service instance (its own HTTP server and in-memory state) over the database
 * already in context, as a second process on the same PostgreSQL would be.
 */
export const appInstance = (
  operations: ReadonlyArray<AnyOperation<OperationServices>>,
  config: Partial<AppConfigShape> = {},
  /** Who verifies and settles x402 payments: the configured facilitator, or a test's. */
  facilitator: Layer.Layer<X402Facilitator, never, AppConfig> = X402Facilitator.layer
) =>
  Effect.gen(function* () {
    // The caller's context may hold an AppConfig of its own (the store's); the one made here from
    // `config` is the instance's.
    const database = Context.omit(AppConfig)(yield* Effect.context<SqlClient.SqlClient>())
    const built = yield* Layer.build(
      appLayer(operations, Layer.succeedContext(database), Ids.layer, facilitator).pipe(
        Layer.provideMerge(worldUpstream),
        Layer.provide(AppConfig.layerTest({ trustedProxies: ["127.0.0.1", "::1"], ...config }))
      )
    )
    const address = Context.get(built, HttpServer.HttpServer).address
    return { client: clientOf("port" in address ? `http://127.0.0.1:${address.port}` : "http://unix"), built }
  })
