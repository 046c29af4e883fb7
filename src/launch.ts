// The service as `node src/main.ts` runs it, imported by main.ts once Node's compile cache is on.
import { Cause, Config, Context, Deferred, Duration, Effect, Exit, Layer, Option, Runtime } from "effect"
import { AppConfig, logFormatConfig, logLevelConfig } from "./config.ts"
import { explainStartupFailure, logStarted } from "./launchReport.ts"
import { describeStore, loggingLayer, logUpstreamFailures } from "./logging.ts"
import { Lifecycle } from "./observability/Lifecycle.ts"
import { tracingLayer } from "./observability/tracing.ts"
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
  Layer.provide(tracingLayer),
  Layer.provideMerge(AppConfig.layer)
)

/**
 * Runs the service until SIGTERM or SIGINT, then shuts it down gracefully: `/readyz` answers 503
 * at once while the listener keeps serving for `SHUTDOWN_DRAIN_SECONDS` (a load balancer notices
 * and sends calls elsewhere); then the listener closes, idle connections with it, and calls in
 * flight get `SHUTDOWN_GRACE_SECONDS` to finish before they are stopped, which releases what they
 * hold and charges nothing; then every worker stops (its leases released) and the store closes.
 * A second signal exits at once.
 */
const serveUntilSignalled = Effect.scoped(
  Effect.gen(function* () {
    // Listening for signals from the start.
    const signalled = yield* Deferred.make<NodeJS.Signals>()
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const again = (second: NodeJS.Signals) => {
          process.stderr.write(`${second} again: exiting at once\n`)
          process.exit(1)
        }
        const first = (signal: NodeJS.Signals) => {
          process.off("SIGTERM", first)
          process.off("SIGINT", first)
          process.once("SIGTERM", again)
          process.once("SIGINT", again)
          Deferred.doneUnsafe(signalled, Exit.succeed(signal))
        }
        process.on("SIGTERM", first)
        process.on("SIGINT", first)
        return first
      }),
      (first) =>
        Effect.sync(() => {
          process.off("SIGTERM", first)
          process.off("SIGINT", first)
        })
    )
    // A signal during the start-up stops it: nothing is served yet, so there is nothing to drain.
    const built = yield* Effect.raceFirst(
      Effect.map(Layer.build(App), Option.some),
      Effect.as(Deferred.await(signalled), Option.none())
    )
    if (Option.isNone(built)) return
    const context = built.value
    const lifecycle = Context.get(context, Lifecycle)
    const config = Context.get(context, AppConfig)
    const signal = yield* Deferred.await(signalled)
    yield* lifecycle.beginDrain
    yield* Effect.logInfo(
      `${signal}: draining; /readyz answers 503, the listener closes in ${config.shutdownDrainMs / 1000}s`
    )
    yield* Effect.sleep(Duration.millis(config.shutdownDrainMs))
    yield* Effect.logInfo(
      `closing the listener; calls in flight have ${config.shutdownGraceMs / 1000}s to finish`
    )
  })
).pipe(Effect.andThen(Effect.logInfo("stopped")))

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
  return yield* serveUntilSignalled.pipe(
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

/**
 * Like `NodeRuntime.runMain`, without its own signal handling (the drain above is ours): exit 0
 * once stopped, 1 after a failure.
 */
const runMain = Runtime.makeRunMain(({ fiber, teardown }) => {
  fiber.addObserver((exit) => teardown(exit, (code) => process.exit(code)))
})

runMain(main, { disableErrorReporting: true })
