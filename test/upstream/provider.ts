import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest } from "effect/http"
import { type HttpProviderOptions, layerHttp } from "../../src/upstream/HttpProvider.ts"
import { Upstream } from "../../src/upstream/Upstream.ts"

/** Calls to `/v1/call/*` as the server saw them. */
export interface Stats {
  calls: number
  inFlight: number
  maxInFlight: number
}

/** Serves a routes layer in process on a random port, counting calls at the server. */
export const serve = (routes: Layer.Layer<never, never, HttpRouter.HttpRouter>) =>
  Effect.gen(function* () {
    const stats: Stats = { calls: 0, inFlight: 0, maxInFlight: 0 }
    const counting = <A, E, R>(app: Effect.Effect<A, E, R>) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        if (!request.url.startsWith("/v1/call/")) return app
        stats.calls++
        stats.inFlight++
        stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight)
        return Effect.ensuring(
          app,
          Effect.sync(() => {
            stats.inFlight--
          })
        )
      })
    const server = HttpRouter.serve(routes, {
      disableLogger: true,
      disableListenLog: true,
      middleware: counting
    })
    const node = createServer()
    const context = yield* Layer.build(
      server.pipe(Layer.provideMerge(NodeHttpServer.layer(() => node, { port: 0, host: "127.0.0.1" })))
    )
    // A request the client gave up on can leave its connection open until the client's keep-alive
    // timer ends; the server's shutdown would wait for it.
    yield* Effect.addFinalizer(() => Effect.sync(() => node.closeAllConnections()))
    const address = Context.get(context, HttpServer.HttpServer).address as { readonly port: number }
    return { url: `http://127.0.0.1:${address.port}`, stats }
  })

/** Runs `f` with an HTTP provider for `url`; each run has its own breakers and semaphores. */
export const withProvider = <A, E>(
  url: string,
  options: Partial<HttpProviderOptions>,
  f: (upstream: Upstream["Service"]) => Effect.Effect<A, E>
) =>
  Effect.provide(
    Effect.gen(function* () {
      return yield* f(yield* Upstream)
    }),
    layerHttp({ baseUrl: url, retryBaseMs: 5, ...options })
  )

export const post = (url: string, body: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(url, { method: "POST", body: JSON.stringify(body) })
    return { status: response.status, body: (await response.json()) as unknown }
  })
