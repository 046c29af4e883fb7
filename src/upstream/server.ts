import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { hostsFromEnv } from "../config.ts"
import { upstreamRoutes } from "./http/routes.ts"
import { UpstreamFaults } from "./Upstream.ts"
import { makeWorld, warmUp } from "./world/index.ts"

/** The simulated world as a standalone upstream provider (`npm run upstream`), on the configured hosts. */
const UpstreamServer = Layer.unwrap(
  Effect.gen(function* () {
    const port = yield* Config.Int("UPSTREAM_PORT").pipe(Config.withDefault(8788))
    const host = yield* Config.String("UPSTREAM_HOST").pipe(Config.withDefault("127.0.0.1"))
    const seed = yield* Config.String("WORLD_SEED").pipe(Config.withDefault("svc-world-1"))
    const world = makeWorld(seed, yield* hostsFromEnv)
    // Build the search tables before listening, so that an answering /healthz means ready.
    yield* Effect.sync(() => warmUp(world))
    const routes = upstreamRoutes(world, yield* UpstreamFaults)
    return HttpRouter.serve(routes, { disableLogger: true }).pipe(
      Layer.provide(NodeHttpServer.layer(createServer, { port, host }))
    )
  })
).pipe(Layer.provide(UpstreamFaults.layer))

Layer.launch(UpstreamServer).pipe(Effect.orDie, NodeRuntime.runMain)
