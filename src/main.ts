import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AppConfig } from "./config.ts"
import { operations } from "./operations/registry.ts"
import { appLayer } from "./server.ts"
import { layerFromConfig } from "./upstream/HttpProvider.ts"
import { UpstreamFaults } from "./upstream/Upstream.ts"

/** The simulated world unless UPSTREAM_URL names a provider; its fault knobs stay reachable by the operator. */
const UpstreamLayer = layerFromConfig.pipe(Layer.provideMerge(UpstreamFaults.layer))

Layer.launch(appLayer(operations).pipe(Layer.provide(UpstreamLayer), Layer.provide(AppConfig.layer))).pipe(
  Effect.orDie,
  NodeRuntime.runMain
)
