import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { AppConfig } from "./config.ts"
import type { AnyOperation } from "./operations/Operation.ts"
import { Accounts } from "./services/Accounts.ts"
import { IdempotencyStore } from "./services/IdempotencyStore.ts"
import { Ids } from "./services/Ids.ts"
import { Ledger } from "./services/Ledger.ts"
import { RateLimits } from "./services/RateLimits.ts"
import { Settings } from "./services/Settings.ts"
import { Usage } from "./services/Usage.ts"
import { httpRoutes } from "./surfaces/http/app.ts"
import { Problems } from "./surfaces/http/problems.ts"

/** The services behind every surface, over one migrated SqlClient. */
export const ServicesLayer = Layer.mergeAll(
  Accounts.layer,
  Usage.layer,
  RateLimits.layer,
  Problems.layer,
  Ledger.layer,
  IdempotencyStore.layer
).pipe(Layer.provideMerge(Settings.layer), Layer.provideMerge(Ids.layer))

/**
 * Builds every route (and so the database and its migrations) before the socket listens,
 * so no request can arrive at a half-built server.
 */
export const httpServerLayer = <R>(operations: ReadonlyArray<AnyOperation<R>>) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const config = yield* AppConfig
      const app = yield* HttpRouter.toHttpEffect(httpRoutes(operations))
      return HttpServer.serve(app).pipe(
        HttpServer.withLogAddress,
        Layer.provide(NodeHttpServer.layer(createServer, { port: config.port, host: config.host }))
      )
    })
  ).pipe(Layer.provide(NodeHttpServer.layerHttpServices))
