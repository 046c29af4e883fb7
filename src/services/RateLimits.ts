import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { RateLimiter } from "effect/persistence"
import { AppConfig } from "../config.ts"

/** The Redis client, loaded only when REDIS_URL is set: the client library is hundreds of modules. */
const redisLayer = (url: string) =>
  Layer.unwrap(
    Effect.map(
      Effect.promise(() => import("@effect/platform-node/NodeRedis")),
      (NodeRedis) => NodeRedis.layer({ url })
    )
  )

export interface LimitWindow {
  readonly key: string
  readonly limit: number
  readonly window: Duration.Input
}

export type LimitResult =
  | { readonly allowed: true; readonly giveBack: Effect.Effect<void> }
  | { readonly allowed: false; readonly retryAfterSeconds: number }

/**
 * Fixed-window limits on Effect's RateLimiter: in memory for one instance, in Redis when
 * REDIS_URL is set so every instance shares them. `giveBack` returns the token when a later
 * check rejects the call, so a rejected call never spends a limit.
 */
export class RateLimits extends Context.Service<
  RateLimits,
  { readonly take: (window: LimitWindow) => Effect.Effect<LimitResult> }
>()("app/RateLimits") {
  static readonly make = Effect.gen(function* () {
    const limiter = yield* RateLimiter.RateLimiter
    // hot path
    const take = (window: LimitWindow): Effect.Effect<LimitResult> => {
      const consume = (tokens: number) =>
        limiter.consume({
          algorithm: "fixed-window",
          onExceeded: "fail",
          key: window.key,
          limit: window.limit,
          window: window.window,
          tokens
        })
      return consume(1).pipe(
        Effect.map((): LimitResult => ({ allowed: true, giveBack: Effect.ignore(consume(-1)) })),
        Effect.catch((error) =>
          error.reason._tag === "RateLimitExceeded"
            ? Effect.succeed<LimitResult>({
                allowed: false,
                retryAfterSeconds: Math.max(1, Math.ceil(Duration.toSeconds(error.reason.retryAfter)))
              })
            : // A broken limit store must not take the service down: log and let the call through.
              Effect.logWarning("rate limit store failed; allowing the call", error).pipe(
                Effect.as<LimitResult>({ allowed: true, giveBack: Effect.void })
              )
        )
      )
    }
    return RateLimits.of({ take })
  })

  static readonly layerMemory = Layer.effect(RateLimits, RateLimits.make).pipe(
    Layer.provide(RateLimiter.layer),
    Layer.provide(RateLimiter.layerStoreMemory)
  )

  static readonly layerRedis = (url: string) =>
    Layer.effect(RateLimits, RateLimits.make).pipe(
      Layer.provide(RateLimiter.layer),
      Layer.provide(RateLimiter.layerStoreRedis({ prefix: "svc:rl:" })),
      Layer.provide(redisLayer(url))
    )

  /** Redis when REDIS_URL is set, memory otherwise. */
  static readonly layer = Layer.unwrap(
    Effect.map(AppConfig, (config) =>
      Option.match(config.redisUrl, {
        onNone: () => RateLimits.layerMemory,
        onSome: (url) => RateLimits.layerRedis(Redacted.value(url))
      })
    )
  )
}
