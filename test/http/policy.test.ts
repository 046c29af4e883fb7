import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Exit } from "effect"
import { AppConfig } from "../../src/config.ts"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const fromEnv = (env: Record<string, string>) =>
  AppConfig.fromEnv.pipe(
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))
  )

describe("policy configuration", () => {
  it.effect("the documented numbers are the defaults", () =>
    Effect.gen(function* () {
      const config = yield* fromEnv({})
      assert.deepStrictEqual(config.policy, defaultPolicy)
      assert.strictEqual(config.upgradeUrl, "http://127.0.0.1:8787/upgrade")
      assert.deepStrictEqual(config.checkoutRails, ["local"])
    })
  )

  it.effect("every number is read from the environment", () =>
    Effect.gen(function* () {
      const config = yield* fromEnv({
        FREE_CREDITS_PER_IP_DAY: "50",
        RATE_LIMIT_TRIAL: "3",
        RATE_LIMIT_FLEX: "4",
        RATE_LIMIT_PRODUCTION: "5",
        TRIAL_SEARCH_LIMIT: "7",
        CLAIM_GRANT_CREDITS: "500",
        MINT_PER_IP_HOUR: "2",
        CHECKOUTS_PER_IP_HOUR: "3",
        CHECKOUTS_PER_ACCOUNT_HOUR: "6",
        CHECKOUT_KEEP_HOURS: "2",
        STRIPE_CHECKOUT_KEEP_DAYS: "9",
        REPLAY_HOURS: "1",
        TOMBSTONE_DAYS: "2",
        CACHE_RECENT_HOURS: "3",
        CACHE_KEEP_DAYS: "4",
        CACHE_MEMORY_MB: "8",
        PACK_FLEX_PRICE_CENTS: "1000",
        PACK_FLEX_CREDITS: "4000",
        PACK_PRODUCTION_PRICE_CENTS: "5000",
        PACK_PRODUCTION_CREDITS_PER_MONTH: "30000",
        LEASE_SECONDS: "30",
        UPGRADE_URL: "https://pay.example.test/buy",
        SIGNIN_STARTS_PER_IP: "6",
        SIGNIN_STARTS_PER_IP_MINUTES: "16",
        SIGNIN_STARTS_PER_EMAIL_IP: "4",
        SIGNIN_STARTS_PER_EMAIL_IP_MINUTES: "61",
        SIGNIN_STARTS_PER_EMAIL: "2",
        SIGNIN_STARTS_PER_EMAIL_MINUTES: "5",
        SIGNIN_WRONG_CODES_PER_IP: "30",
        SIGNIN_WRONG_CODES_PER_IP_MINUTES: "20",
        SIGNIN_WRONG_TRIES_PER_CODE_IP: "3",
        SIGNIN_WRONG_TRIES_PER_CODE_OTHERS: "12",
        RECOVER_PER_IP: "7",
        RECOVER_PER_IP_MINUTES: "17",
        RECOVER_PER_EMAIL_IP: "2",
        RECOVER_PER_EMAIL_IP_MINUTES: "30",
        RECOVER_PER_EMAIL: "4",
        RECOVER_PER_EMAIL_MINUTES: "8",
        MAX_ACTIVE_KEYS: "12",
        MAX_CHILD_KEYS: "7",
        EXPORTS_PER_ACCOUNT: "4",
        EXPORTS_PER_ACCOUNT_MINUTES: "2",
        OPERATOR_AUTH_FAILURES_PER_IP: "3",
        OPERATOR_AUTH_FAILURES_PER_IP_MINUTES: "5",
        OAUTH_AUTHORIZATIONS_PER_IP: "6",
        OAUTH_AUTHORIZATION_WINDOW_MINUTES: "5",
        OAUTH_CLIENT_FETCHES_PER_IP: "3",
        OAUTH_CLIENT_FETCH_WINDOW_MINUTES: "2",
        OAUTH_CLIENT_FETCH_TIMEOUT_MS: "900",
        OAUTH_CLIENT_DOCUMENT_MAX_BYTES: "2048",
        OAUTH_CLIENT_DOCUMENT_CACHE_MIN_SECONDS: "60",
        OAUTH_CLIENT_DOCUMENT_CACHE_MAX_SECONDS: "600",
        OAUTH_UNUSED_CLIENT_DAYS: "3",
        WEBHOOK_MAX_ENDPOINTS: "4",
        WEBHOOK_TIMEOUT_MS: "2500",
        WEBHOOK_RETRY_FIRST_SECONDS: "2",
        WEBHOOK_RETRY_MAX_SECONDS: "600",
        WEBHOOK_RETRY_HOURS: "6",
        WEBHOOK_DISABLE_AFTER_HOURS: "24",
        WEBHOOK_RESPONSE_MAX_BYTES: "256",
        WEBHOOK_CONCURRENCY: "2",
        WEBHOOK_KEEP_DAYS: "7",
        WEBHOOK_TESTS_PER_ACCOUNT: "5",
        WEBHOOK_TESTS_PER_ACCOUNT_MINUTES: "10",
        WEBHOOK_CONNECT_TIMEOUT_MS: "700",
        WEBHOOK_CONCURRENCY_PER_ACCOUNT: "1",
        WEBHOOK_MAX_PENDING: "50",
        WEBHOOK_TESTS_PER_ENDPOINT: "2",
        WEBHOOK_TESTS_PER_ENDPOINT_MINUTES: "3",
        TOPUP_FAILURES_TO_DISARM: "2",
        TOPUP_RETRY_MINUTES: "30",
        TOPUP_CHARGE_ATTEMPTS: "3",
        EXPORT_MAX_DAYS: "31",
        EXPORT_PAGE_ROWS: "250"
      })
      const minute = 60_000
      const hour = 3_600_000
      assert.deepStrictEqual(config.policy, {
        freeCreditsPerIpDay: 50,
        ratePerMinute: { trial: 3, flex: 4, production: 5 },
        trialSearchLimit: 7,
        claimGrantCredits: 500,
        mintPerIpHour: 2,
        checkoutsPerIpHour: 3,
        checkoutsPerAccountHour: 6,
        checkoutKeepMs: 2 * hour,
        stripeCheckoutKeepMs: 9 * 24 * hour,
        replayWindowMs: hour,
        tombstoneMs: 48 * hour,
        cacheRecentMs: 3 * hour,
        cacheKeepMs: 96 * hour,
        cacheMemoryBytes: 8 * 1024 * 1024,
        packs: [
          { pack: "flex", mode: "one_time", price_usd_cents: 1000, credits: 4000 },
          { pack: "production", mode: "subscription", price_usd_cents: 5000, credits_per_month: 30000 }
        ],
        signIn: {
          perIp: { limit: 6, windowMs: 16 * minute },
          perEmailIp: { limit: 4, windowMs: 61 * minute },
          perEmail: { limit: 2, windowMs: 5 * minute },
          wrongCodesPerIp: { limit: 30, windowMs: 20 * minute },
          wrongTriesPerCodeIp: 3,
          wrongTriesPerCodeOthers: 12
        },
        recovery: {
          perIp: { limit: 7, windowMs: 17 * minute },
          perEmailIp: { limit: 2, windowMs: 30 * minute },
          perEmail: { limit: 4, windowMs: 8 * minute }
        },
        maxActiveKeysPerAccount: 12,
        maxChildKeysPerKey: 7,
        maxChildKeysPerAccount: 1_000,
        childKeyChangesPerKey: { limit: 30, windowMs: minute },
        childKeyChangesPerAccount: { limit: 60, windowMs: minute },
        exportsPerAccount: { limit: 4, windowMs: 2 * minute },
        auditReadsPerAccount: { limit: 120, windowMs: minute },
        operatorAuthFailuresPerIp: { limit: 3, windowMs: 5 * minute },
        oauth: {
          authorizationsPerIp: 6,
          authorizationWindowMs: 5 * 60_000,
          clientFetchesPerIp: 3,
          clientFetchWindowMs: 2 * 60_000,
          clientFetchTimeoutMs: 900,
          clientDocumentMaxBytes: 2048,
          clientDocumentCacheMinSeconds: 60,
          clientDocumentCacheMaxSeconds: 600,
          unusedClientMs: 72 * hour
        },
        webhooks: {
          maxEndpointsPerAccount: 4,
          timeoutMs: 2500,
          connectTimeoutMs: 700,
          retryFirstMs: 2000,
          retryMaxMs: 600_000,
          retryForMs: 6 * hour,
          disableAfterMs: 24 * hour,
          responseMaxBytes: 256,
          concurrency: 2,
          perAccount: 1,
          maxPendingPerEndpoint: 50,
          keepMs: 7 * 24 * hour,
          tests: { limit: 5, windowMs: 10 * minute },
          testsPerEndpoint: { limit: 2, windowMs: 3 * minute }
        },
        topup: { failuresToDisarm: 2, retryAfterFailureMs: 30 * minute, chargeAttempts: 3 },
        exportMaxDays: 31,
        exportPageRows: 250
      })
      assert.strictEqual(config.leaseMs, 30_000)
      assert.strictEqual(config.upgradeUrl, "https://pay.example.test/buy")
    })
  )

  it.effect("a number that is not a positive integer stops the start-up", () =>
    Effect.gen(function* () {
      for (const bad of ["0", "-3", "1.5", "many"]) {
        const exit = yield* Effect.exit(fromEnv({ FREE_CREDITS_PER_IP_DAY: bad }))
        assert.isTrue(Exit.isFailure(exit), bad)
      }
    })
  )
})

describe(`a configured policy reaches every answer (${storeName})`, () => {
  const packs = [
    { pack: "flex" as const, mode: "one_time" as const, price_usd_cents: 990, credits: 1_234 },
    {
      pack: "production" as const,
      mode: "subscription" as const,
      price_usd_cents: 4_900,
      credits_per_month: 9_999
    }
  ]
  layer(
    testApp(testOperations, {
      policy: { ...defaultPolicy, freeCreditsPerIpDay: 10, mintPerIpHour: 2, trialSearchLimit: 5, packs },
      upgradeUrl: "https://pay.example.test/buy"
    }),
    { timeout: 60_000, excludeTestServices: true }
  )((it) => {
    it.effect("mint, usage, caps and offers use the configured numbers and upgrade URL", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.88.0.1"
        const minted = (yield* app.call("/v1/keys/mint", { method: "POST", ip })).body
        assert.strictEqual(minted.account_id, "acct_test000001", "the app's ids count from 1")
        assert.strictEqual(minted.free_tier.credits_per_ip_day, 10)
        assert.strictEqual(minted.upgrade_url, `https://pay.example.test/buy?account=${minted.account_id}`)
        const key = minted.key
        assert.strictEqual((yield* app.call("/v1/usage", { key, ip })).body.free_tier.credits_per_ip_day, 10)

        const wide = yield* app.call("/v1/profnet/test-echo?value=x&limit=6", { key, ip })
        assert.strictEqual(wide.body.code, "TRIAL_CAP_EXCEEDED")
        assert.include(wide.body.message, "at most 5 results")

        const first = yield* app.call("/v1/profnet/test-echo?value=x&cost=8", { key, ip })
        assert.strictEqual(first.status, 200)
        assert.strictEqual(first.headers.get("x-receipt-id"), "rcpt_test000001")
        const over = yield* app.call("/v1/profnet/test-echo?value=x&cost=4", { key, ip })
        assert.strictEqual(over.body.code, "TRIAL_CAP_EXCEEDED")
        assert.deepStrictEqual(over.body.offer.packs, packs)
        // A free key's error: the public upgrade link, and the offer's checkout that credits this key.
        assert.strictEqual(over.body.upgrade_url, "https://pay.example.test/buy")
        assert.strictEqual(
          over.body.offer.checkout_url,
          `https://pay.example.test/buy?account=${minted.account_id}`
        )

        assert.strictEqual((yield* app.call("/v1/keys/mint", { method: "POST", ip })).status, 200)
        const third = yield* app.call("/v1/keys/mint", { method: "POST", ip })
        assert.strictEqual(third.body.code, "RATE_LIMITED")
        assert.include(third.body.message, "At most 2 keys")
      })
    )
  })
})
