import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AppConfig } from "./config.ts"
import { operations } from "./operations/registry.ts"
import { appLayer } from "./server.ts"

Layer.launch(appLayer(operations).pipe(Layer.provide(AppConfig.layer))).pipe(
  Effect.orDie,
  NodeRuntime.runMain
)
