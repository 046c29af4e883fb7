// The framework's floor: the baseline's body from one route of Effect's HTTP server, built as the
// service builds its own (`src/service.ts`: node:http's server under `NodeHttpServer.layer`, a
// router made into one handler, `HttpServer.serve`), with nothing of the service around it. What
// a request costs here above the bare node:http server is Effect's, before any of our code runs.
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { baselineBody } from "./reference.ts"

const port = Number(process.argv[2] ?? "8791")
const answer = HttpServerResponse.text(baselineBody, { contentType: "application/json" })
const routes = HttpRouter.use((router) => router.add("GET", "/", Effect.succeed(answer)))

Layer.unwrap(Effect.map(HttpRouter.toHttpEffect(routes), (app) => HttpServer.serve(app))).pipe(
  Layer.provide(NodeHttpServer.layer(() => createServer(), { port, host: "127.0.0.1" })),
  Layer.provide(NodeHttpServer.layerHttpServices),
  Layer.launch,
  Effect.runFork
)
