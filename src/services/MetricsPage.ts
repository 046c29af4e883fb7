import { createHash, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../config.ts"
import type { RateLimited } from "../contract/errors.ts"
import { setRecording } from "../observability/metrics.ts"
import { makeScrape } from "../observability/scrape.ts"
import { RateLimits } from "./RateLimits.ts"

export const prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

const digest = (value: string) => createHash("sha256").update(value).digest()

/**
 * The Prometheus page and who may read it: on `PORT` behind `Authorization: Bearer` of
 * `METRICS_TOKEN` (its own token: the admin token never opens it, and without METRICS_TOKEN
 * nothing does), or, with `METRICS_PORT`, on that port without auth and not on `PORT` at all.
 * Wrong tokens are counted per client IP: past OPERATOR_AUTH_FAILURES_PER_IP, RATE_LIMITED.
 */
export class MetricsPage extends Context.Service<
  MetricsPage,
  {
    readonly render: Effect.Effect<string>
    /** Whether `GET /metrics` is served on the main port (not with `METRICS_PORT` or `METRICS=off`). */
    readonly onMainPort: boolean
    /** Constant-time check of the bearer credential from `ip`, its failures counted per IP. */
    readonly allows: (credential: string, ip: string) => Effect.Effect<boolean, RateLimited>
  }
>()("services/MetricsPage") {
  static readonly layer = Layer.effect(
    MetricsPage,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const limits = yield* RateLimits
      setRecording(config.metrics)
      const render = yield* makeScrape
      const check = Option.match(config.metricsToken, {
        onNone: () => (_credential: string) => false,
        onSome: (token) => {
          const expected = digest(Redacted.value(token))
          return (credential: string) => timingSafeEqual(digest(credential), expected)
        }
      })
      const rule = config.policy.operatorAuthFailuresPerIp
      const allows = (credential: string, ip: string) =>
        limits.checkFailures(`metrics-token-failures:${ip}`, rule, "metrics tokens", () => check(credential))
      if (config.metrics && Option.isSome(config.metricsPort))
        yield* serveAlone(render, config.host, config.metricsPort.value)
      return MetricsPage.of({
        render,
        onMainPort: config.metrics && Option.isNone(config.metricsPort),
        allows
      })
    })
  )
}

/** `METRICS_PORT`: a listener of its own answering `GET /metrics` and nothing else. */
const serveAlone = (render: Effect.Effect<string>, host: string, port: number) =>
  Effect.gen(function* () {
    const context = yield* Effect.context<never>()
    const run = Effect.runPromiseWith(context)
    const server = yield* Effect.acquireRelease(
      Effect.callback<ReturnType<typeof createServer>, Error>((resume) => {
        const server = createServer((request, response) => {
          if (request.method !== "GET" || request.url?.split("?")[0] !== "/metrics") {
            response
              .writeHead(404, { "content-type": "text/plain" })
              .end("Only GET /metrics is served here.\n")
            return
          }
          run(render).then(
            (text) => response.writeHead(200, { "content-type": prometheusContentType }).end(text),
            () => response.writeHead(500).end()
          )
        })
        server.once("error", (error) => resume(Effect.fail(error)))
        server.listen(port, host, () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    ).pipe(Effect.orDie)
    yield* Effect.logInfo(`metrics: GET /metrics on http://${host}:${port} (no auth)`)
    return server
  })
