import type { LogLevel } from "effect"
import { Config, ConfigProvider, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { defaultHosts, type Hosts, isHostName } from "./domain/identifiers/hosts.ts"
import { type PaymentRailName, paymentRailNames } from "./domain/plans.ts"
import { defaultPolicy, type LimitRule, type Policy, type StartLimits } from "./domain/policy.ts"
import { operatorTokenWeakness } from "./domain/secrets.ts"

/** Everything an operator can set, read once at start-up through Effect `Config`. */
export interface AppConfigShape {
  readonly port: number
  readonly host: string
  readonly baseUrl: string
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly redisUrl: Option.Option<Redacted.Redacted<string>>
  readonly trustedProxies: ReadonlyArray<string>
  /** `IPV6_PREFIX_BITS`: per-IP rules count an IPv6 client by its network of this many bits (64). */
  readonly ipv6PrefixBits: number
  /** `LOG_LEVEL`, read in any case. */
  readonly logLevel: LogLevel.LogLevel
  /** `LOG_FORMAT`: `pretty` or `json`. */
  readonly logFormat: LogFormat
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
  /** The product's numbers (budgets, limits, ages, packs); `defaultPolicy`'s are the defaults. */
  readonly policy: Policy
  /** Where offers and usage send a person to pay (`?account=` is added for an account). */
  readonly upgradeUrl: string
  /**
   * `PAYMENT_RAILS`: the checkout rails offered, in the order offers list them (the first is the
   * default). `stripe` when Stripe is configured, otherwise `local` (the built-in test-mode rail,
   * which moves no money); `local` beside Stripe only when named explicitly.
   */
  readonly checkoutRails: ReadonlyArray<PaymentRailName>
  /** Stripe, when `STRIPE_SECRET_KEY` and `STRIPE_WEBHOOK_SECRET` are set. */
  readonly stripe: Option.Option<StripeConfig>
  /** What every offer says about refunds (`REFUND_POLICY`). */
  readonly refundPolicy: string
  /** The platforms' hosts, which identifiers, canonical URLs, messages and descriptions name. */
  readonly hosts: Hosts
  /**
   * `OAUTH_ALLOW_PRIVATE_CLIENT_URLS`: the authorization server may fetch client documents from
   * loopback and private addresses. For tests with a local document server only; off by default.
   */
  readonly oauthAllowPrivateClientUrls: boolean
  /**
   * `WEBHOOK_ALLOW_PRIVATE_URLS`: webhook URLs may be `http://` and resolve to loopback and private
   * addresses (tests, a self-hosted network); off by default.
   */
  readonly webhookAllowPrivateUrls: boolean
  /**
   * `WEBHOOK_SECRET_KEY`: the AES-256-GCM key (32 bytes, base64 or hex) webhook signing secrets are
   * encrypted with at rest; unset, one is generated into `DATA_DIR/webhook-secret-key`.
   */
  readonly webhookSecretKey: Option.Option<Redacted.Redacted<string>>
  /**
   * `RECEIPT_SIGNING_KEY`: the Ed25519 private JWK receipts are signed with; unset, one is made once
   * and kept with the store (`DATA_DIR/receipt-signing-key` for PGlite on disk, the database
   * otherwise, so every instance on one PostgreSQL signs with the same key).
   */
  readonly receiptSigningKey: Option.Option<Redacted.Redacted<string>>
  /** `METRICS`: `on` (default) records and serves the metrics; `off` records nothing and serves no `/metrics`. */
  readonly metrics: boolean
  /** `METRICS_TOKEN`: the bearer of `GET /metrics`; unset, the admin token. */
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  /** `METRICS_PORT`: serve `/metrics` on this port of `HOST` without auth (and not on `PORT`). */
  readonly metricsPort: Option.Option<number>
  /** `SHUTDOWN_DRAIN_SECONDS`: after SIGTERM, how long `/readyz` answers 503 while the listener still serves. */
  readonly shutdownDrainMs: number
  /** `SHUTDOWN_GRACE_SECONDS`: then how long calls in flight may finish before they are stopped (charging nothing). */
  readonly shutdownGraceMs: number
  /**
   * `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): export spans over
   * OTLP/HTTP there; unset, no tracer at all. The other `OTEL_*` settings are the exporter's own.
   */
  readonly otlpEndpoint: Option.Option<string>
  /** `OTEL_EXPORTER_OTLP_HEADERS` (`name=value,name=value`): sent with every export (a collector's key, say). */
  readonly otlpHeaders: Readonly<Record<string, Redacted.Redacted<string>>>
  /** `OTEL_BSP_SCHEDULE_DELAY`: milliseconds between exports (5000). */
  readonly otlpExportIntervalMs: number
}

/** `name=value,name=value` (values URL-encoded, as OpenTelemetry writes them). */
const otlpHeaders = (text: string): Readonly<Record<string, Redacted.Redacted<string>>> =>
  Object.fromEntries(
    text
      .split(",")
      .map((pair) => pair.split("="))
      .filter((parts) => parts.length >= 2 && parts[0]!.trim().length > 0)
      .map((parts) => [parts[0]!.trim(), Redacted.make(decodeURIComponent(parts.slice(1).join("=").trim()))])
  )

export interface StripeConfig {
  readonly secretKey: Redacted.Redacted<string>
  readonly webhookSecret: Redacted.Redacted<string>
  /** Stripe price ids of the packs (`STRIPE_PRICE_FLEX`, `STRIPE_PRICE_PRODUCTION`); without one, the price is sent inline. */
  readonly prices: { readonly flex: string | undefined; readonly production: string | undefined }
  /** `STRIPE_API_URL`: another Stripe API address (a local fake in tests); Stripe's own by default. */
  readonly apiUrl: string | undefined
}

export const defaultRefundPolicy =
  "Unused purchased credits are refundable within 14 days of purchase; write to the operator's support address."

/**
 * The configured hosts where code reads them without `AppConfig` at hand (identifier cleaning in
 * `prepare`, messages in `run`): the default hosts unless a layer provides others, as the app
 * layer does from `AppConfig`.
 */
export const PlatformHosts = Context.Reference<Hosts>("config/PlatformHosts", {
  defaultValue: () => defaultHosts
})

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("config/AppConfig") {
  static readonly fromEnv = Effect.gen(function* () {
    const port = yield* Config.Port("PORT").pipe(Config.withDefault(8787))
    const host = yield* Config.String("HOST").pipe(Config.withDefault("127.0.0.1"))
    const baseUrl = yield* Config.String("BASE_URL").pipe(Config.withDefault(`http://127.0.0.1:${port}`))
    const stripe = yield* stripeFromEnv
    const checkoutRails = yield* paymentRailsFromEnv(stripe)
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
      ipv6PrefixBits: yield* Config.schema(
        Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 128 })),
        "IPV6_PREFIX_BITS"
      ).pipe(Config.withDefault(64)),
      logLevel: yield* logLevelConfig,
      logFormat: yield* logFormatConfig,
      adminToken: yield* operatorToken("ADMIN_TOKEN"),
      maxBodyBytes: yield* Config.Int("MAX_BODY_BYTES").pipe(Config.withDefault(64 * 1024)),
      maxResponseBytes: yield* Config.Int("MAX_RESPONSE_BYTES").pipe(Config.withDefault(4 * 1024 * 1024)),
      leaseMs: (yield* Config.Int("LEASE_SECONDS").pipe(Config.withDefault(60))) * 1000,
      policy: yield* policyFromEnv,
      upgradeUrl: yield* Config.String("UPGRADE_URL").pipe(
        Config.withDefault(`${baseUrl.replace(/\/+$/, "")}/upgrade`)
      ),
      checkoutRails,
      stripe,
      refundPolicy: yield* Config.String("REFUND_POLICY").pipe(Config.withDefault(defaultRefundPolicy)),
      hosts: yield* hostsFromEnv,
      oauthAllowPrivateClientUrls: yield* Config.Boolean("OAUTH_ALLOW_PRIVATE_CLIENT_URLS").pipe(
        Config.withDefault(false)
      ),
      webhookAllowPrivateUrls: yield* Config.Boolean("WEBHOOK_ALLOW_PRIVATE_URLS").pipe(
        Config.withDefault(false)
      ),
      webhookSecretKey: yield* Config.option(Config.Redacted("WEBHOOK_SECRET_KEY")),
      receiptSigningKey: yield* Config.option(Config.Redacted("RECEIPT_SIGNING_KEY")),
      metrics: yield* Config.Literals(["on", "off"], "METRICS").pipe(
        Config.withDefault("on"),
        Config.map((value) => value === "on")
      ),
      metricsToken: yield* operatorToken("METRICS_TOKEN"),
      metricsPort: yield* Config.option(Config.Port("METRICS_PORT")),
      shutdownDrainMs: (yield* seconds("SHUTDOWN_DRAIN_SECONDS", 5)) * 1000,
      shutdownGraceMs: (yield* seconds("SHUTDOWN_GRACE_SECONDS", 30)) * 1000,
      otlpEndpoint: yield* Config.option(
        Config.NonEmptyString("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").pipe(
          Config.orElse(() =>
            Config.NonEmptyString("OTEL_EXPORTER_OTLP_ENDPOINT").pipe(
              Config.map((base) => `${base.replace(/\/+$/, "")}/v1/traces`)
            )
          )
        )
      ),
      otlpHeaders: yield* Config.String("OTEL_EXPORTER_OTLP_HEADERS").pipe(
        Config.withDefault(""),
        Config.map(otlpHeaders)
      ),
      otlpExportIntervalMs: yield* positive("OTEL_BSP_SCHEDULE_DELAY", 5000)
    })
  })

  static readonly layer = Layer.effect(AppConfig, AppConfig.fromEnv)

  /** `PlatformHosts` as configured. */
  static readonly hostsLayer = Layer.effect(
    PlatformHosts,
    AppConfig.useSync((config) => config.hosts)
  )

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
        ipv6PrefixBits: 64,
        logLevel: "Warn",
        logFormat: "pretty",
        adminToken: Option.some(Redacted.make("test-admin-token-7f3a9c2e5b8d1f4a6c")),
        maxBodyBytes: 64 * 1024,
        maxResponseBytes: 4 * 1024 * 1024,
        leaseMs: 60_000,
        policy: defaultPolicy,
        upgradeUrl: "http://svc.test/upgrade",
        checkoutRails: ["local"],
        stripe: Option.none(),
        refundPolicy: defaultRefundPolicy,
        hosts: defaultHosts,
        oauthAllowPrivateClientUrls: false,
        webhookAllowPrivateUrls: false,
        webhookSecretKey: Option.none(),
        receiptSigningKey: Option.none(),
        metrics: true,
        metricsToken: Option.some(Redacted.make("test-metrics-token-4b8e1d6a9c3f7e2a5d")),
        metricsPort: Option.none(),
        shutdownDrainMs: 0,
        shutdownGraceMs: 30_000,
        otlpEndpoint: Option.none(),
        otlpHeaders: {},
        otlpExportIntervalMs: 5000,
        ...overrides
      })
    )
}

const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))
const positive = (name: string, fallback: number) =>
  Config.schema(PositiveInt, name).pipe(Config.withDefault(fallback))

/** A duration in seconds, zero or more (fractions allowed). */
const seconds = (name: string, fallback: number) =>
  Config.schema(Schema.Number.check(Schema.isGreaterThanOrEqualTo(0)), name).pipe(
    Config.withDefault(fallback)
  )

const HostName = Schema.String.check(
  Schema.makeFilter(
    (text: string) =>
      isHostName(text) ||
      `Expected a bare lower-case host name such as ${defaultHosts.profnet} (no scheme, port, path, trailing dot, www. or m.), got "${text}"`
  )
)
const hostName = (name: string, fallback: string) =>
  Config.schema(HostName, name).pipe(Config.withDefault(fallback))

/**
 * `PROFNET_HOST`, `FORUM_HOST` and `MICROBLOG_HOST`, defaulting to `defaultHosts`; three
 * distinct host names. The simulated world reads the same, so that its URLs are the service's.
 */
export const hostsFromEnv: Config.Config<Hosts> = Config.all({
  profnet: hostName("PROFNET_HOST", defaultHosts.profnet),
  forum: hostName("FORUM_HOST", defaultHosts.forum),
  microblog: hostName("MICROBLOG_HOST", defaultHosts.microblog)
}).pipe(
  Config.flatMap((hosts) =>
    new Set(Object.values(hosts)).size === 3
      ? Config.succeed(hosts)
      : Config.fail(
          new ConfigProvider.SourceError({
            message: `PROFNET_HOST, FORUM_HOST and MICROBLOG_HOST must be three different hosts, got ${hosts.profnet}, ${hosts.forum} and ${hosts.microblog}`
          })
        )
  )
)

/** An operator token from the environment; a weak one (`operatorTokenWeakness`) stops the start-up. */
const operatorToken = (name: string) =>
  Effect.gen(function* () {
    const token = yield* Config.option(Config.Redacted(name))
    if (Option.isNone(token)) return token
    const weakness = operatorTokenWeakness(name, Redacted.value(token.value))
    if (weakness === undefined) return token
    return yield* Effect.fail(new Config.ConfigError(new ConfigProvider.SourceError({ message: weakness })))
  })

/** Stripe when both its secret key and its webhook secret are set; one without the other stops the start-up. */
const stripeFromEnv = Effect.gen(function* () {
  const secretKey = yield* Config.option(Config.Redacted("STRIPE_SECRET_KEY"))
  const webhookSecret = yield* Config.option(Config.Redacted("STRIPE_WEBHOOK_SECRET"))
  if (Option.isNone(secretKey) && Option.isNone(webhookSecret)) return Option.none<StripeConfig>()
  if (Option.isNone(secretKey) || Option.isNone(webhookSecret)) {
    return yield* Effect.fail(
      new Config.ConfigError(
        new ConfigProvider.SourceError({
          message: "Set both STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET to enable Stripe, or neither."
        })
      )
    )
  }
  const optional = (name: string) =>
    Config.option(Config.String(name)).pipe(Effect.map(Option.getOrUndefined))
  return Option.some<StripeConfig>({
    secretKey: secretKey.value,
    webhookSecret: webhookSecret.value,
    prices: {
      flex: yield* optional("STRIPE_PRICE_FLEX"),
      production: yield* optional("STRIPE_PRICE_PRODUCTION")
    },
    apiUrl: yield* optional("STRIPE_API_URL")
  })
})

/**
 * `PAYMENT_RAILS` (comma-separated, in the order offers list them). Unset: `stripe` when Stripe is
 * configured, otherwise `local`. Naming `stripe` without Stripe's keys, an unknown rail, or no rail
 * at all stops the start-up: a rail that cannot take money is never offered by accident.
 */
export const paymentRailsFromEnv = (stripe: Option.Option<StripeConfig>) =>
  Effect.gen(function* () {
    const fail = (message: string) =>
      Effect.fail(new Config.ConfigError(new ConfigProvider.SourceError({ message })))
    const text = yield* Config.option(Config.String("PAYMENT_RAILS"))
    if (Option.isNone(text)) return Option.isSome(stripe) ? (["stripe"] as const) : (["local"] as const)
    const named = text.value
      .split(",")
      .map((entry) => entry.trim().toLowerCase())
      .filter((entry) => entry.length > 0)
    const unknown = named.filter((name) => !(paymentRailNames as ReadonlyArray<string>).includes(name))
    if (unknown.length > 0)
      return yield* fail(`PAYMENT_RAILS names ${unknown.join(", ")}; the rails are local and stripe`)
    if (named.length === 0) return yield* fail("PAYMENT_RAILS names no rail; name local, stripe or both")
    if (named.includes("stripe") && Option.isNone(stripe))
      return yield* fail(
        "PAYMENT_RAILS names stripe, but STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are not set"
      )
    return [...new Set(named)] as ReadonlyArray<PaymentRailName>
  })

/** `NAME` events per `NAME_MINUTES` minutes. */
const limitRule = (name: string, fallback: LimitRule) =>
  Effect.gen(function* () {
    const minutes = yield* positive(`${name}_MINUTES`, fallback.windowMs / 60_000)
    return { limit: yield* positive(name, fallback.limit), windowMs: minutes * 60_000 } satisfies LimitRule
  })

/** `PREFIX_PER_IP`, `PREFIX_PER_EMAIL_IP` and `PREFIX_PER_EMAIL`, each with its `_MINUTES`. */
const startLimits = (prefix: string, fallback: StartLimits) =>
  Effect.gen(function* () {
    return {
      perIp: yield* limitRule(`${prefix}_PER_IP`, fallback.perIp),
      perEmailIp: yield* limitRule(`${prefix}_PER_EMAIL_IP`, fallback.perEmailIp),
      perEmail: yield* limitRule(`${prefix}_PER_EMAIL`, fallback.perEmail)
    } satisfies StartLimits
  })

/** Every number of `Policy` from the environment, defaulting to `defaultPolicy`'s. */
const policyFromEnv = Effect.gen(function* () {
  const hour = 3_600_000
  const minute = 60_000
  const [flex, production] = defaultPolicy.packs
  const oauth = defaultPolicy.oauth
  const { webhooks, topup } = defaultPolicy
  return {
    freeCreditsPerIpDay: yield* positive("FREE_CREDITS_PER_IP_DAY", defaultPolicy.freeCreditsPerIpDay),
    ratePerMinute: {
      trial: yield* positive("RATE_LIMIT_TRIAL", defaultPolicy.ratePerMinute.trial),
      flex: yield* positive("RATE_LIMIT_FLEX", defaultPolicy.ratePerMinute.flex),
      production: yield* positive("RATE_LIMIT_PRODUCTION", defaultPolicy.ratePerMinute.production)
    },
    trialSearchLimit: yield* positive("TRIAL_SEARCH_LIMIT", defaultPolicy.trialSearchLimit),
    claimGrantCredits: yield* positive("CLAIM_GRANT_CREDITS", defaultPolicy.claimGrantCredits),
    mintPerIpHour: yield* positive("MINT_PER_IP_HOUR", defaultPolicy.mintPerIpHour),
    checkoutsPerIpHour: yield* positive("CHECKOUTS_PER_IP_HOUR", defaultPolicy.checkoutsPerIpHour),
    checkoutsPerAccountHour: yield* positive(
      "CHECKOUTS_PER_ACCOUNT_HOUR",
      defaultPolicy.checkoutsPerAccountHour
    ),
    checkoutKeepMs: (yield* positive("CHECKOUT_KEEP_HOURS", defaultPolicy.checkoutKeepMs / hour)) * hour,
    stripeCheckoutKeepMs:
      (yield* positive("STRIPE_CHECKOUT_KEEP_DAYS", defaultPolicy.stripeCheckoutKeepMs / (24 * hour))) *
      24 *
      hour,
    replayWindowMs: (yield* positive("REPLAY_HOURS", defaultPolicy.replayWindowMs / hour)) * hour,
    tombstoneMs: (yield* positive("TOMBSTONE_DAYS", defaultPolicy.tombstoneMs / (24 * hour))) * 24 * hour,
    cacheRecentMs: (yield* positive("CACHE_RECENT_HOURS", defaultPolicy.cacheRecentMs / hour)) * hour,
    cacheKeepMs: (yield* positive("CACHE_KEEP_DAYS", defaultPolicy.cacheKeepMs / (24 * hour))) * 24 * hour,
    cacheMemoryBytes:
      (yield* positive("CACHE_MEMORY_MB", defaultPolicy.cacheMemoryBytes / (1024 * 1024))) * 1024 * 1024,
    packs: [
      {
        ...flex!,
        price_usd_cents: yield* positive("PACK_FLEX_PRICE_CENTS", flex!.price_usd_cents),
        credits: yield* positive("PACK_FLEX_CREDITS", flex!.credits ?? 0)
      },
      {
        ...production!,
        price_usd_cents: yield* positive("PACK_PRODUCTION_PRICE_CENTS", production!.price_usd_cents),
        credits_per_month: yield* positive(
          "PACK_PRODUCTION_CREDITS_PER_MONTH",
          production!.credits_per_month ?? 0
        )
      }
    ],
    signIn: {
      ...(yield* startLimits("SIGNIN_STARTS", defaultPolicy.signIn)),
      wrongCodesPerIp: yield* limitRule("SIGNIN_WRONG_CODES_PER_IP", defaultPolicy.signIn.wrongCodesPerIp),
      wrongTriesPerCodeIp: yield* positive(
        "SIGNIN_WRONG_TRIES_PER_CODE_IP",
        defaultPolicy.signIn.wrongTriesPerCodeIp
      ),
      wrongTriesPerCodeOthers: yield* positive(
        "SIGNIN_WRONG_TRIES_PER_CODE_OTHERS",
        defaultPolicy.signIn.wrongTriesPerCodeOthers
      )
    },
    recovery: yield* startLimits("RECOVER", defaultPolicy.recovery),
    maxActiveKeysPerAccount: yield* positive("MAX_ACTIVE_KEYS", defaultPolicy.maxActiveKeysPerAccount),
    maxChildKeysPerKey: yield* positive("MAX_CHILD_KEYS", defaultPolicy.maxChildKeysPerKey),
    maxChildKeysPerAccount: yield* positive(
      "MAX_CHILD_KEYS_PER_ACCOUNT",
      defaultPolicy.maxChildKeysPerAccount
    ),
    childKeyChangesPerKey: yield* limitRule("CHILD_KEY_CHANGES_PER_KEY", defaultPolicy.childKeyChangesPerKey),
    childKeyChangesPerAccount: yield* limitRule(
      "CHILD_KEY_CHANGES_PER_ACCOUNT",
      defaultPolicy.childKeyChangesPerAccount
    ),
    exportsPerAccount: yield* limitRule("EXPORTS_PER_ACCOUNT", defaultPolicy.exportsPerAccount),
    auditReadsPerAccount: yield* limitRule("AUDIT_READS_PER_ACCOUNT", defaultPolicy.auditReadsPerAccount),
    operatorAuthFailuresPerIp: yield* limitRule(
      "OPERATOR_AUTH_FAILURES_PER_IP",
      defaultPolicy.operatorAuthFailuresPerIp
    ),
    oauth: {
      authorizationsPerIp: yield* positive("OAUTH_AUTHORIZATIONS_PER_IP", oauth.authorizationsPerIp),
      authorizationWindowMs:
        (yield* positive("OAUTH_AUTHORIZATION_WINDOW_MINUTES", oauth.authorizationWindowMs / minute)) *
        minute,
      clientFetchesPerIp: yield* positive("OAUTH_CLIENT_FETCHES_PER_IP", oauth.clientFetchesPerIp),
      clientFetchWindowMs:
        (yield* positive("OAUTH_CLIENT_FETCH_WINDOW_MINUTES", oauth.clientFetchWindowMs / minute)) * minute,
      clientFetchTimeoutMs: yield* positive("OAUTH_CLIENT_FETCH_TIMEOUT_MS", oauth.clientFetchTimeoutMs),
      clientDocumentMaxBytes: yield* positive(
        "OAUTH_CLIENT_DOCUMENT_MAX_BYTES",
        oauth.clientDocumentMaxBytes
      ),
      clientDocumentCacheMinSeconds: yield* positive(
        "OAUTH_CLIENT_DOCUMENT_CACHE_MIN_SECONDS",
        oauth.clientDocumentCacheMinSeconds
      ),
      clientDocumentCacheMaxSeconds: yield* positive(
        "OAUTH_CLIENT_DOCUMENT_CACHE_MAX_SECONDS",
        oauth.clientDocumentCacheMaxSeconds
      ),
      unusedClientMs:
        (yield* positive("OAUTH_UNUSED_CLIENT_DAYS", oauth.unusedClientMs / (24 * hour))) * 24 * hour
    },
    webhooks: {
      maxEndpointsPerAccount: yield* positive("WEBHOOK_MAX_ENDPOINTS", webhooks.maxEndpointsPerAccount),
      timeoutMs: yield* positive("WEBHOOK_TIMEOUT_MS", webhooks.timeoutMs),
      connectTimeoutMs: yield* positive("WEBHOOK_CONNECT_TIMEOUT_MS", webhooks.connectTimeoutMs),
      retryFirstMs: (yield* positive("WEBHOOK_RETRY_FIRST_SECONDS", webhooks.retryFirstMs / 1000)) * 1000,
      retryMaxMs: (yield* positive("WEBHOOK_RETRY_MAX_SECONDS", webhooks.retryMaxMs / 1000)) * 1000,
      retryForMs: (yield* positive("WEBHOOK_RETRY_HOURS", webhooks.retryForMs / hour)) * hour,
      disableAfterMs: (yield* positive("WEBHOOK_DISABLE_AFTER_HOURS", webhooks.disableAfterMs / hour)) * hour,
      responseMaxBytes: yield* positive("WEBHOOK_RESPONSE_MAX_BYTES", webhooks.responseMaxBytes),
      concurrency: yield* positive("WEBHOOK_CONCURRENCY", webhooks.concurrency),
      perAccount: yield* positive("WEBHOOK_CONCURRENCY_PER_ACCOUNT", webhooks.perAccount),
      maxPendingPerEndpoint: yield* positive("WEBHOOK_MAX_PENDING", webhooks.maxPendingPerEndpoint),
      keepMs: (yield* positive("WEBHOOK_KEEP_DAYS", webhooks.keepMs / (24 * hour))) * 24 * hour,
      tests: yield* limitRule("WEBHOOK_TESTS_PER_ACCOUNT", webhooks.tests),
      testsPerEndpoint: yield* limitRule("WEBHOOK_TESTS_PER_ENDPOINT", webhooks.testsPerEndpoint)
    },
    topup: {
      failuresToDisarm: yield* positive("TOPUP_FAILURES_TO_DISARM", topup.failuresToDisarm),
      retryAfterFailureMs:
        (yield* positive("TOPUP_RETRY_MINUTES", topup.retryAfterFailureMs / minute)) * minute,
      chargeAttempts: yield* positive("TOPUP_CHARGE_ATTEMPTS", topup.chargeAttempts)
    },
    exportMaxDays: yield* positive("EXPORT_MAX_DAYS", defaultPolicy.exportMaxDays),
    exportPageRows: yield* positive("EXPORT_PAGE_ROWS", defaultPolicy.exportPageRows)
  } satisfies Policy
})

const levels = [
  "All",
  "Trace",
  "Debug",
  "Info",
  "Warn",
  "Error",
  "Fatal",
  "None"
] as const satisfies ReadonlyArray<LogLevel.LogLevel>

/** `LOG_LEVEL` in any case (`info`, `INFO`, `Info`); anything else stops the start-up, naming the choices. */
export const logLevelConfig: Config.Config<LogLevel.LogLevel> = Config.String("LOG_LEVEL").pipe(
  Config.withDefault("Info"),
  Config.flatMap((text) => {
    const level = levels.find((candidate) => candidate.toLowerCase() === text.trim().toLowerCase())
    return level !== undefined
      ? Config.succeed(level)
      : Config.fail(
          new ConfigProvider.SourceError({
            message: `LOG_LEVEL must be one of ${levels.join(", ")} (any case), got "${text}"`
          })
        )
  })
)

export type LogFormat = "pretty" | "json"

/** `LOG_FORMAT`: `pretty` (the default, for people) or `json` (one JSON object a line, for machines). */
export const logFormatConfig: Config.Config<LogFormat> = Config.String("LOG_FORMAT").pipe(
  Config.withDefault("pretty"),
  Config.flatMap((text) => {
    const format = text.trim().toLowerCase()
    return format === "pretty" || format === "json"
      ? Config.succeed(format)
      : Config.fail(
          new ConfigProvider.SourceError({ message: `LOG_FORMAT must be pretty or json, got "${text}"` })
        )
  })
)

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
