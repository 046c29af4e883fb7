import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AppConfig } from "./config.ts"
import { operations } from "./operations/registry.ts"
import { httpServerLayer, ServicesLayer } from "./server.ts"
import * as Database from "./store/Database.ts"

const Main = httpServerLayer(operations).pipe(
  Layer.provide(ServicesLayer),
  Layer.provide(Database.layer),
  Layer.provide(AppConfig.layer)
)

Layer.launch(Main).pipe(Effect.orDie, NodeRuntime.runMain)
