import { Context, Effect, Layer, Logger, type LogLevel, Option, References } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import type { LogFormat } from "./config.ts"
import { recordUpstream } from "./observability/metrics.ts"
import { methodPlatform, Upstream } from "./upstream/Upstream.ts"

/** The minimum level and the logger (Effect's JSON logger for `json`) of the whole process. */
export const loggingLayer = (level: LogLevel.LogLevel, format: LogFormat) =>
  Layer.mergeAll(
    Layer.succeed(References.MinimumLogLevel, level),
    format === "json" ? Logger.layer([Logger.consoleJson]) : Layer.empty
  )

/**
 * What a request's handling learns that its log line names: the account behind the bearer key.
 * The request log provides a fresh note per request; `Bearers.authenticate` fills it in.
 */
export interface RequestNote {
  account: string | undefined
}

export const CurrentRequestNote = Context.Reference<RequestNote | undefined>("logging/CurrentRequestNote", {
  defaultValue: () => undefined
})

export const noteAccount = (account: string): Effect.Effect<void> =>
  Effect.map(CurrentRequestNote, (note) => {
    if (note !== undefined) note.account = account
  })

/**
 * One `Debug` line per request: method, path, status, milliseconds, account and receipt (when there
 * are). Nothing is measured or noted when `Debug` is off.
 */
export const withRequestLog = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(References.MinimumLogLevel, (minimum) =>
    minimum !== "All" && minimum !== "Trace" && minimum !== "Debug" ? app : logged(app)
  )

const logged = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const note: RequestNote = { account: undefined }
    const started = performance.now()
    const response = yield* Effect.provideService(app, CurrentRequestNote, note)
    const ms = Math.round(performance.now() - started)
    const path = request.url.split("?")[0]
    yield* Effect.logDebug(
      `${request.method} ${path} ${response.status} ${ms}ms account=${note.account ?? "-"} receipt=${response.headers["x-receipt-id"] ?? "-"}`
    )
    return response
  })

/**
 * The upstream, observed: each request counted by platform and outcome (and the circuit's state
 * with it), a span per request, and a `Debug` line for each failed one (its method, platform and
 * reason).
 */
export const logUpstreamFailures = Layer.effect(
  Upstream,
  Effect.gen(function* () {
    const upstream = yield* Upstream
    return Upstream.of({
      // Built when run: a cache hit hands the call to the cache unrun, and a span's stack trace
      // (taken when `withSpan` is applied) cost 4% of a hit's CPU.
      call: (method, ...args) =>
        Effect.suspend(() =>
          upstream.call(method, ...args).pipe(
            Effect.tap(() => Effect.sync(() => recordUpstream(methodPlatform[method], "ok"))),
            Effect.tapError((failure) => {
              recordUpstream(failure.platform, failure.reason)
              return Effect.logDebug(
                `upstream ${method} failed: ${failure.reason} (${failure.platform}, retry after ${failure.retryAfterSeconds}s)`
              )
            }),
            Effect.withSpan("upstream.call", {
              kind: "client",
              attributes: { method, platform: methodPlatform[method] }
            })
          )
        )
    })
  })
)

/** Where the store is, without credentials: the PGlite directory, or PostgreSQL's host, port and database. */
export const describeStore = (databaseUrl: Option.Option<string>, dataDir: string): string =>
  Option.match(databaseUrl, {
    onNone: () => (dataDir === ":memory:" ? "PGlite in memory" : `PGlite in ${dataDir}`),
    onSome: (text) => {
      if (!URL.canParse(text)) return "PostgreSQL (DATABASE_URL is not a URL)"
      const url = new URL(text)
      return `PostgreSQL at ${url.hostname}:${url.port || "5432"}${url.pathname}`
    }
  })
