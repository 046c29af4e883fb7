import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AppConfig } from "./config.ts"
import { operations } from "./operations/registry.ts"
import { appLayer } from "./server.ts"
import { layerWorld, UpstreamFaults } from "./upstream/Upstream.ts"

const UpstreamLayer = layerWorld("svc-world-1").pipe(Layer.provideMerge(UpstreamFaults.layer))

Layer.launch(appLayer(operations).pipe(Layer.provide(UpstreamLayer), Layer.provide(AppConfig.layer))).pipe(
  Effect.orDie,
  NodeRuntime.runMain
)
