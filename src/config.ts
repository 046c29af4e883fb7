import type { LogLevel } from "effect"
import { Config, ConfigProvider, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { defaultHosts, type Hosts, isHostName } from "./domain/identifiers/hosts.ts"
import { offeredRailNames, type PaymentRailName, paymentRailNames } from "./domain/plans.ts"
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
  /**
   * The x402 rail, when `PAYMENT_RAILS` offers it (named, or unset with `X402_PAY_TO` set): agents
   * pay with an EIP-3009 token inside the call that needs the credits, or at `POST /v1/credits/x402`.
   */
  readonly x402: Option.Option<X402Config>
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

/** The x402 rail's settings (`X402_*`). */
export interface X402Config {
  /** `X402_PAY_TO`: the address that receives the payments. */
  readonly payTo: string
  /** `X402_NETWORK`: the CAIP-2 chain (`eip155:8453`). */
  readonly network: string
  /** `X402_ASSET`: the EIP-3009 token's address; `X402_ASSET_NAME` and `X402_ASSET_VERSION`: its EIP-712 domain. */
  readonly asset: string
  readonly assetName: string
  readonly assetVersion: string
  /** `X402_ATOMIC_PER_CREDIT`: token units per credit (2,000: $0.002 a credit for a 6-decimal USD token). */
  readonly atomicPerCredit: number
  /** `X402_MIN_CREDITS`: the fewest credits one payment buys (500). */
  readonly minCredits: number
  /**
   * `X402_SCHEMES` names `upto` (beside `exact`, always offered): a call refused INSUFFICIENT_CREDITS
   * also offers x402's `upto` scheme (a Permit2 authorization of at most the call's `max_credits`,
   * of which the service settles only what the call lacks). Only with the service's own facilitator,
   * whose address the authorization names.
   */
  readonly upto?: boolean
  /**
   * Who verifies and settles: the service's own facilitator on `X402_RPC_URL` with
   * `X402_FACILITATOR_PRIVATE_KEY` (it pays the gas), else a facilitator at `X402_FACILITATOR_URL`.
   */
  readonly facilitator:
    | { readonly _tag: "InProcess"; readonly rpcUrl: string; readonly privateKey: Redacted.Redacted<string> }
    | { readonly _tag: "Remote"; readonly url: string }
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
    const { checkoutRails, x402 } = yield* paymentRailsFromEnv(stripe)
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
      x402,
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
        x402: Option.none(),
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

const configFailure = (message: string) =>
  Effect.fail(new Config.ConfigError(new ConfigProvider.SourceError({ message })))

/**
 * The x402 rail's settings, read when `X402_PAY_TO` is set (or `PAYMENT_RAILS` names x402): every
 * one it needs, or the start-up stops with one sentence naming what is missing.
 */
const x402FromEnv = (named: boolean) =>
  Effect.gen(function* () {
    const text = (name: string) =>
      Config.option(Config.NonEmptyString(name)).pipe(Effect.map(Option.getOrUndefined))
    const payTo = yield* text("X402_PAY_TO")
    if (payTo === undefined && !named) return Option.none<X402Config>()
    const network = yield* text("X402_NETWORK")
    const asset = yield* text("X402_ASSET")
    const assetName = yield* text("X402_ASSET_NAME")
    const assetVersion = yield* text("X402_ASSET_VERSION")
    const rpcUrl = yield* text("X402_RPC_URL")
    const privateKey = (yield* Config.option(Config.Redacted("X402_FACILITATOR_PRIVATE_KEY"))).pipe(
      Option.filter((key) => Redacted.value(key).length > 0)
    )
    const facilitatorUrl = yield* text("X402_FACILITATOR_URL")
    const missing = [
      ...(payTo === undefined ? ["X402_PAY_TO"] : []),
      ...(network === undefined ? ["X402_NETWORK"] : []),
      ...(asset === undefined ? ["X402_ASSET"] : []),
      ...(assetName === undefined ? ["X402_ASSET_NAME"] : []),
      ...(assetVersion === undefined ? ["X402_ASSET_VERSION"] : []),
      ...(rpcUrl === undefined && Option.isNone(privateKey) && facilitatorUrl === undefined
        ? ["a facilitator (X402_FACILITATOR_URL, or X402_RPC_URL with X402_FACILITATOR_PRIVATE_KEY)"]
        : []),
      ...(rpcUrl !== undefined && Option.isNone(privateKey)
        ? ["X402_FACILITATOR_PRIVATE_KEY (X402_RPC_URL is set)"]
        : []),
      ...(rpcUrl === undefined && Option.isSome(privateKey)
        ? ["X402_RPC_URL (X402_FACILITATOR_PRIVATE_KEY is set)"]
        : [])
    ]
    if (missing.length > 0)
      return yield* configFailure(
        `The x402 rail needs ${missing.join(", ")}, which ${missing.length === 1 ? "is" : "are"} not set.`
      )
    if (!/^eip155:[0-9]+$/.test(network!))
      return yield* configFailure(
        `X402_NETWORK must be an EVM chain in CAIP-2 form such as eip155:8453, got "${network}".`
      )
    const schemes = (yield* text("X402_SCHEMES"))?.split(",").map((scheme) => scheme.trim()) ?? ["exact"]
    const unknown = schemes.filter((scheme) => scheme !== "exact" && scheme !== "upto")
    if (unknown.length > 0 || !schemes.includes("exact"))
      return yield* configFailure(
        `X402_SCHEMES lists the x402 schemes offered, exact and optionally upto (such as "exact,upto"), got "${schemes.join(",")}".`
      )
    const upto = schemes.includes("upto")
    if (upto && rpcUrl === undefined)
      return yield* configFailure(
        "X402_SCHEMES names upto, which needs the service's own facilitator (X402_RPC_URL with X402_FACILITATOR_PRIVATE_KEY): the authorization names the facilitator that may settle it."
      )
    for (const [name, value] of [
      ["X402_PAY_TO", payTo],
      ["X402_ASSET", asset]
    ] as const) {
      if (!/^0x[0-9a-fA-F]{40}$/.test(value!))
        return yield* configFailure(`${name} must be a 0x-prefixed 20-byte address, got "${value}".`)
    }
    return Option.some<X402Config>({
      payTo: payTo!,
      network: network!,
      asset: asset!,
      assetName: assetName!,
      assetVersion: assetVersion!,
      atomicPerCredit: yield* positive("X402_ATOMIC_PER_CREDIT", 2000),
      minCredits: yield* positive("X402_MIN_CREDITS", 500),
      upto,
      facilitator:
        rpcUrl !== undefined && Option.isSome(privateKey)
          ? { _tag: "InProcess", rpcUrl, privateKey: privateKey.value }
          : { _tag: "Remote", url: facilitatorUrl! }
    })
  })

/**
 * `PAYMENT_RAILS` (comma-separated, in the order offers list them). Unset: every configured rail
 * (`x402` when `X402_PAY_TO` is set, `stripe` when Stripe is configured, otherwise `local`). Naming
 * a rail without its settings, an unknown rail, or no rail at all stops the start-up: a rail that
 * cannot take money is never offered by accident. `x402` is no checkout rail (it has no checkout
 * page): named alone, the checkout rails are the unset default's.
 */
export const paymentRailsFromEnv = (stripe: Option.Option<StripeConfig>) =>
  Effect.gen(function* () {
    const text = yield* Config.option(Config.String("PAYMENT_RAILS"))
    const checkoutDefault = Option.isSome(stripe) ? (["stripe"] as const) : (["local"] as const)
    if (Option.isNone(text)) return { checkoutRails: checkoutDefault, x402: yield* x402FromEnv(false) }
    const named = text.value
      .split(",")
      .map((entry) => entry.trim().toLowerCase())
      .filter((entry) => entry.length > 0)
    const unknown = named.filter((name) => !(offeredRailNames as ReadonlyArray<string>).includes(name))
    if (unknown.length > 0)
      return yield* configFailure(
        `PAYMENT_RAILS names ${unknown.join(", ")}; the rails are local, stripe and x402`
      )
    if (named.length === 0)
      return yield* configFailure("PAYMENT_RAILS names no rail; name local, stripe or x402")
    if (named.includes("stripe") && Option.isNone(stripe))
      return yield* configFailure(
        "PAYMENT_RAILS names stripe, but STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are not set"
      )
    const checkoutRails = [...new Set(named)].filter((name): name is PaymentRailName =>
      (paymentRailNames as ReadonlyArray<string>).includes(name)
    )
    return {
      checkoutRails: checkoutRails.length === 0 ? checkoutDefault : checkoutRails,
      x402: named.includes("x402") ? yield* x402FromEnv(true) : Option.none<X402Config>()
    }
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
