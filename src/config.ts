import type { LogLevel } from "effect"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"

/** Everything an operator can set, read once at start-up through Effect `Config`. */
export interface AppConfigShape {
  readonly port: number
  readonly host: string
  readonly baseUrl: string
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly redisUrl: Option.Option<Redacted.Redacted<string>>
  readonly trustedProxies: ReadonlyArray<string>
  readonly logLevel: LogLevel.LogLevel
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  /** Largest request body accepted, in bytes (PAYLOAD_TOO_LARGE above it). */
  readonly maxBodyBytes: number
  /** Largest data response served, in bytes (PAYLOAD_TOO_LARGE above it). */
  readonly maxResponseBytes: number
  /**
   * How long a metered call may hold its idempotency claim and the account's in-flight slot
   * without settling, in milliseconds. Past it the call is taken for dead: its reservation is
   * refunded and its key may be claimed again. A call that outlives its lease is fenced off.
   */
  readonly leaseMs: number
}

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("app/AppConfig") {
  static readonly fromEnv = Effect.gen(function* () {
    const port = yield* Config.Port("PORT").pipe(Config.withDefault(8787))
    const host = yield* Config.String("HOST").pipe(Config.withDefault("127.0.0.1"))
    const baseUrl = yield* Config.String("BASE_URL").pipe(Config.withDefault(`http://127.0.0.1:${port}`))
    return AppConfig.of({
      port,
      host,
      baseUrl: baseUrl.replace(/\/+$/, ""),
      databaseUrl: yield* Config.option(Config.Redacted("DATABASE_URL")),
      dataDir: yield* Config.String("DATA_DIR").pipe(Config.withDefault("./.data")),
      redisUrl: yield* Config.option(Config.Redacted("REDIS_URL")),
      trustedProxies: (yield* Config.String("TRUSTED_PROXIES").pipe(Config.withDefault("")))
        .split(",")
        .map((entry) => entry.trim())
        .filter((entry) => entry.length > 0),
      logLevel: yield* Config.LogLevel("LOG_LEVEL").pipe(Config.withDefault("Info" as const)),
      adminToken: yield* Config.option(Config.Redacted("ADMIN_TOKEN")),
      maxBodyBytes: yield* Config.Int("MAX_BODY_BYTES").pipe(Config.withDefault(64 * 1024)),
      maxResponseBytes: yield* Config.Int("MAX_RESPONSE_BYTES").pipe(Config.withDefault(4 * 1024 * 1024)),
      leaseMs: (yield* Config.Int("LEASE_SECONDS").pipe(Config.withDefault(60))) * 1000
    })
  })

  static readonly layer = Layer.effect(AppConfig, AppConfig.fromEnv)

  static readonly layerTest = (overrides: Partial<AppConfigShape> = {}) =>
    Layer.succeed(
      AppConfig,
      AppConfig.of({
        port: 0,
        host: "127.0.0.1",
        baseUrl: "http://svc.test",
        databaseUrl: Option.none(),
        dataDir: ":memory:",
        redisUrl: Option.none(),
        trustedProxies: [],
        logLevel: "Warn",
        adminToken: Option.some(Redacted.make("test-admin-token")),
        maxBodyBytes: 64 * 1024,
        maxResponseBytes: 4 * 1024 * 1024,
        leaseMs: 60_000,
        ...overrides
      })
    )
}

/** Public links derived from BASE_URL. */
export const links = (baseUrl: string) => ({
  mcp: `${baseUrl}/mcp`,
  login: `${baseUrl}/login`,
  activate: `${baseUrl}/activate`,
  docs: `${baseUrl}/docs`,
  openapi: `${baseUrl}/v1/openapi.json`,
  upgrade: `${baseUrl}/upgrade`,
  claim: `${baseUrl}/claim`,
  errorDoc: (code: string) => `${baseUrl}/docs/errors#${code}`
})
