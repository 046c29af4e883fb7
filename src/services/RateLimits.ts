import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { RateLimiter } from "effect/persistence"
import { AppConfig } from "../config.ts"
import { RateLimited } from "../contract/errors.ts"
import { type LimitRule, windowWords } from "../domain/policy.ts"

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
  | {
      readonly allowed: true
      readonly giveBack: Effect.Effect<void>
      /** Calls left in the window after this one, and seconds until the window starts afresh. */
      readonly remaining: number
      readonly resetSeconds: number
    }
  | { readonly allowed: false; readonly retryAfterSeconds: number }

/** What is left of a window without taking from it. */
export interface LimitState {
  readonly remaining: number
  readonly resetSeconds: number
}

/**
 * Fixed-window limits on Effect's RateLimiter: in memory for one instance, in Redis when
 * REDIS_URL is set so every instance shares them. `giveBack` returns the token when a later
 * check rejects the call, so a rejected call never spends a limit.
 */
export class RateLimits extends Context.Service<
  RateLimits,
  {
    readonly take: (window: LimitWindow) => Effect.Effect<LimitResult>
    readonly peek: (window: LimitWindow) => Effect.Effect<LimitState>
    /**
     * A token of every window or none: a refusal by a later one gives the earlier ones theirs back.
     * RATE_LIMITED names the window that refused (`what` says what was limited).
     */
    readonly takeAll: (
      windows: ReadonlyArray<{ readonly key: string; readonly rule: LimitRule }>,
      what: string
    ) => Effect.Effect<void, RateLimited>
    /**
     * A credential check whose failures are counted under `key`: once `rule`'s failures are spent in
     * its window, RATE_LIMITED before the credential is even compared. A success costs nothing.
     */
    readonly checkFailures: (
      key: string,
      rule: LimitRule,
      what: string,
      check: () => boolean
    ) => Effect.Effect<boolean, RateLimited>
  }
>()("services/RateLimits") {
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
        Effect.map(
          (result): LimitResult => ({
            allowed: true,
            // Built only when given back: most calls keep their token.
            giveBack: Effect.suspend(() => Effect.ignore(consume(-1))),
            remaining: result.remaining,
            resetSeconds: Math.max(0, Math.ceil(Duration.toSeconds(result.resetAfter)))
          })
        ),
        Effect.catch((error) =>
          error.reason._tag === "RateLimitExceeded"
            ? Effect.succeed<LimitResult>({
                allowed: false,
                retryAfterSeconds: Math.max(1, Math.ceil(Duration.toSeconds(error.reason.retryAfter)))
              })
            : // A broken limit store must not take the service down: log and let the call through.
              Effect.logWarning("rate limit store failed; allowing the call", error).pipe(
                Effect.as<LimitResult>({
                  allowed: true,
                  giveBack: Effect.void,
                  remaining: window.limit,
                  resetSeconds: 0
                })
              )
        )
      )
    }
    // hot path
    const peek = (window: LimitWindow): Effect.Effect<LimitState> =>
      limiter
        .consume({
          algorithm: "fixed-window",
          onExceeded: "fail",
          key: window.key,
          limit: window.limit,
          window: window.window,
          tokens: 0
        })
        .pipe(
          Effect.map(
            (result): LimitState => ({
              remaining: result.remaining,
              resetSeconds: Math.max(0, Math.ceil(Duration.toSeconds(result.resetAfter)))
            })
          ),
          Effect.orElseSucceed(() => ({ remaining: window.limit, resetSeconds: 0 }))
        )
    const takeAll = (
      windows: ReadonlyArray<{ readonly key: string; readonly rule: LimitRule }>,
      what: string
    ) =>
      Effect.gen(function* () {
        const taken: Array<Effect.Effect<void>> = []
        for (const { key, rule } of windows) {
          const result = yield* take({ key, limit: rule.limit, window: rule.windowMs })
          if (!result.allowed) {
            yield* Effect.all(taken)
            return yield* new RateLimited({
              message: `Too many ${what} requests; at most ${rule.limit} per ${windowWords(rule.windowMs)}. Retry after retry_after_seconds.`,
              retry_after_seconds: result.retryAfterSeconds
            })
          }
          taken.push(result.giveBack)
        }
      })
    const checkFailures = (key: string, rule: LimitRule, what: string, check: () => boolean) =>
      Effect.flatMap(peek({ key, limit: rule.limit, window: rule.windowMs }), (left) => {
        if (left.remaining <= 0)
          return Effect.fail(
            new RateLimited({
              message: `Too many wrong ${what} from this address; at most ${rule.limit} per ${windowWords(rule.windowMs)}. Retry after retry_after_seconds.`,
              retry_after_seconds: Math.max(1, left.resetSeconds)
            })
          )
        if (check()) return Effect.succeed(true)
        return Effect.as(take({ key, limit: rule.limit, window: rule.windowMs }), false)
      })
    return RateLimits.of({ take, peek, takeAll, checkFailures })
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
