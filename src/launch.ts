// The service as `node src/main.ts` runs it, imported by main.ts once Node's compile cache is on.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Config, Effect, Layer, Option } from "effect"
import { AppConfig, logFormatConfig, logLevelConfig } from "./config.ts"
import { explainStartupFailure, logStarted } from "./launchReport.ts"
import { describeStore, loggingLayer, logUpstreamFailures } from "./logging.ts"
import { operations } from "./operations/registry.ts"
import { appLayer } from "./service.ts"
import { layerFromConfig } from "./upstream/HttpProvider.ts"
import { UpstreamFaults } from "./upstream/Upstream.ts"

/** The simulated world unless UPSTREAM_URL names a provider; its fault knobs stay reachable by the operator. */
const UpstreamLayer = logUpstreamFailures.pipe(
  Layer.provide(layerFromConfig),
  Layer.provideMerge(UpstreamFaults.layer)
)

const App = Layer.effectDiscard(logStarted).pipe(
  Layer.provideMerge(appLayer(operations)),
  Layer.provide(UpstreamLayer),
  Layer.provide(AppConfig.layer)
)

/** A start-up failure is one sentence on stderr and exit code 1; the whole cause only at `Debug`. */
const main = Effect.gen(function* () {
  // Read before the app, so that a bad LOG_LEVEL is reported as plainly as any other failure.
  const level = yield* Effect.orElseSucceed(logLevelConfig, () => "Info" as const)
  const format = yield* Effect.orElseSucceed(logFormatConfig, () => "pretty" as const)
  const port = yield* Effect.orElseSucceed(Config.String("PORT"), () => "8787")
  const host = yield* Effect.orElseSucceed(Config.String("HOST"), () => "127.0.0.1")
  const databaseUrl = yield* Effect.orElseSucceed(Config.option(Config.String("DATABASE_URL")), () =>
    Option.none()
  )
  const dataDir = yield* Effect.orElseSucceed(Config.String("DATA_DIR"), () => "./.data")
  const store = describeStore(databaseUrl, dataDir)
  return yield* Layer.launch(App).pipe(
    Effect.catchCause((cause) =>
      Effect.gen(function* () {
        if (Cause.hasInterruptsOnly(cause)) return yield* Effect.failCause(cause)
        const verbose = level === "Debug" || level === "Trace" || level === "All"
        yield* Effect.sync(() => {
          process.stderr.write(`${explainStartupFailure(cause, { port, host, store })}\n`)
          if (verbose) process.stderr.write(`${Cause.pretty(cause)}\n`)
        })
        // Reported above; runMain exits non-zero without reporting it again.
        return yield* Effect.failCause(cause)
      })
    ),
    Effect.provide(loggingLayer(level, format))
  )
})

NodeRuntime.runMain(main, { disableErrorReporting: true })
