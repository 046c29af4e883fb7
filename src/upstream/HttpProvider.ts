import { Config, Duration, Effect, Exit, Layer, Option, Schedule, Semaphore } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import { CircuitBreaker } from "effect/persistence"
import { hostsFromEnv } from "../config.ts"
import type { Platform } from "../domain/plans.ts"
import { AttemptError, attempt, defaultRetryAfterSeconds, malformed } from "./http/attempt.ts"
import { type CallBody, callPath, decodeAnswer, encodeArgs } from "./http/wire.ts"
import { type Method, methodPlatform } from "./methods.ts"
import { layerWorld, Upstream, UpstreamFailure, type UpstreamFaults } from "./Upstream.ts"

export interface HttpProviderOptions {
  /** One provider for every platform, or one per platform. */
  readonly baseUrl: string | Readonly<Record<Platform, string>>
  /** Per request, from sending it to reading its body. Default 5000. */
  readonly timeoutMs?: number | undefined
  /** Further attempts after a retryable failure (all upstream calls are safe reads). Default 2. */
  readonly retries?: number | undefined
  /** First retry delay; later ones grow exponentially, with jitter. Default 100. */
  readonly retryBaseMs?: number | undefined
  /** Requests in flight per platform. Default 32. */
  readonly maxInFlight?: number | undefined
  /** Consecutive failed calls that open a platform's circuit. Default 5. */
  readonly breakerFailures?: number | undefined
  /** How long an open circuit fails fast before letting one probe through. Default 10000. */
  readonly breakerOpenMs?: number | undefined
}

const perPlatform = <A>(f: (platform: Platform) => A): Record<Platform, A> => ({
  profnet: f("profnet"),
  forum: f("forum"),
  microblog: f("microblog")
})

/** A rejected call's error, or the attempt's own, as the failure callers know. */
const toFailure = (platform: Platform, error: AttemptError | CircuitBreaker.CircuitBreakerError) => {
  if (error instanceof AttemptError) {
    return new UpstreamFailure({ platform, reason: error.reason, retryAfterSeconds: error.retryAfterSeconds })
  }
  const reason = error.reason
  return reason._tag === "CircuitBreakerStoreError"
    ? new UpstreamFailure({
        platform,
        reason: "unreachable",
        retryAfterSeconds: defaultRetryAfterSeconds.unreachable
      })
    : new UpstreamFailure({
        platform,
        reason: "circuit_open",
        retryAfterSeconds:
          reason._tag === "CircuitOpen"
            ? Math.max(1, Math.ceil(Duration.toMillis(reason.retryAfter) / 1000))
            : 1
      })
}

/** Only a provider that looks unhealthy counts towards opening its circuit. */
const classify = (exit: Exit.Exit<unknown, AttemptError>): CircuitBreaker.Outcome =>
  Exit.isSuccess(exit)
    ? CircuitBreaker.success
    : Option.match(Exit.findErrorOption(exit), {
        onNone: () => CircuitBreaker.failure(),
        onSome: (error) => (error.unhealthy ? CircuitBreaker.failure() : CircuitBreaker.ignored)
      })

/**
 * `Upstream` over the provider contract (see README, "Upstream provider contract"). Per platform:
 * a concurrency cap on requests in flight, retries with backoff, and a circuit breaker around the
 * whole call, so an open circuit fails fast without entering the retry loop.
 */
export const make = Effect.fn("HttpProvider.make")(function* (options: HttpProviderOptions) {
  const client = yield* HttpClient.HttpClient
  const timeout = Duration.millis(options.timeoutMs ?? 5000)
  const retries = options.retries ?? 2
  const backoff = Schedule.exponential(Duration.millis(options.retryBaseMs ?? 100)).pipe(Schedule.jittered)
  const breaker = yield* CircuitBreaker.make({
    tripPolicy: CircuitBreaker.consecutive(options.breakerFailures ?? 5),
    openDuration: Duration.millis(options.breakerOpenMs ?? 10_000)
  })
  const permits = yield* Effect.all(perPlatform(() => Semaphore.make(options.maxInFlight ?? 32)))
  const { baseUrl } = options
  const urls = perPlatform((platform) =>
    (typeof baseUrl === "string" ? baseUrl : baseUrl[platform]).replace(/\/+$/, "")
  )

  /** The provider's `result` for one call, after the retries this failure allows. */
  const send = (method: Method, body: CallBody) => {
    const platform = methodPlatform[method]
    return permits[platform]
      .withPermit(attempt(client, urls[platform] + callPath(method), body, timeout))
      .pipe(Effect.retry({ schedule: backoff, times: retries, while: (error) => error.retryable }))
  }

  /** The provider's answer to one call, decoded with the method's answer schema. */
  const exchange = <M extends Method>(method: M, body: CallBody) =>
    send(method, body).pipe(
      Effect.flatMap((result) =>
        decodeAnswer(method, result).pipe(
          Effect.catch((error) =>
            Effect.logWarning("Upstream answer does not match its declaration").pipe(
              Effect.annotateLogs({ method, issue: error.message }),
              Effect.andThen(malformed())
            )
          )
        )
      )
    )

  return Upstream.of({
    call: (method, ...args) => {
      const platform = methodPlatform[method]
      // Encoding is outside the breaker (a defect there is ours); decoding inside (garbage is unhealthy).
      return encodeArgs(method, args).pipe(
        Effect.flatMap((body) => breaker.execute(exchange(method, body), { key: platform, classify })),
        Effect.mapError((error) => toFailure(platform, error)),
        Effect.withSpan("HttpProvider.call", { attributes: { method, platform } })
      )
    }
  })
})

/** The HTTP provider over whichever `HttpClient` is provided. */
export const layerHttpNoDeps = (
  options: HttpProviderOptions
): Layer.Layer<Upstream, never, HttpClient.HttpClient> =>
  Layer.effect(Upstream, make(options)).pipe(Layer.provide(CircuitBreaker.layerStoreMemory()))

/** The HTTP provider over the platform's `fetch`. */
export const layerHttp = (options: HttpProviderOptions): Layer.Layer<Upstream> =>
  layerHttpNoDeps(options).pipe(Layer.provide(FetchHttpClient.layer))

const optionalUrl = (name: string) => Config.option(Config.NonEmptyString(name))

const platformUrl = (platform: Platform) =>
  Config.NonEmptyString(`UPSTREAM_URL_${platform.toUpperCase()}`).pipe(
    Config.orElse(() => Config.NonEmptyString("UPSTREAM_URL"))
  )

/**
 * The upstream the operator configured: the HTTP provider when `UPSTREAM_URL` (or any
 * `UPSTREAM_URL_<PLATFORM>`) is set, otherwise the simulated world of `WORLD_SEED` on the configured
 * hosts (`PROFNET_HOST`, ...), under the fault knobs.
 */
export const layerFromConfig: Layer.Layer<Upstream, Config.ConfigError, UpstreamFaults> = Layer.unwrap(
  Effect.gen(function* () {
    const configured = yield* Effect.all([
      optionalUrl("UPSTREAM_URL"),
      ...Object.values(perPlatform((platform) => optionalUrl(`UPSTREAM_URL_${platform.toUpperCase()}`)))
    ])
    if (configured.every(Option.isNone)) {
      const seed = yield* Config.String("WORLD_SEED").pipe(Config.withDefault("svc-world-1"))
      return layerWorld(seed, yield* hostsFromEnv)
    }
    return layerHttp({
      baseUrl: yield* Effect.all(perPlatform(platformUrl)),
      timeoutMs: yield* Config.Int("UPSTREAM_TIMEOUT_MS").pipe(Config.withDefault(5000))
    })
  })
)
