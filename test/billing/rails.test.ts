import { afterAll, assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig, paymentRailsFromEnv, type StripeConfig } from "../../src/config.ts"
import { hashSecret } from "../../src/domain/secrets.ts"
import { post } from "../identity/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { startStripeFake } from "../support/stripeFake.ts"
import { testOperations } from "../support/testOperations.ts"
import { moneyOf, pay, startCheckout } from "./support.ts"

const fake = await startStripeFake()
afterAll(() => fake.close())

const stripe: StripeConfig = {
  secretKey: Redacted.make("sk_test_fake"),
  webhookSecret: Redacted.make("whsec_test_0123456789abcdef"),
  prices: { flex: undefined, production: undefined },
  apiUrl: fake.url
}

const withEnv = <A, E, R>(effect: Effect.Effect<A, E, R>, env: Record<string, string>) =>
  effect.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env)))

/** The rails the service offers for an environment, as `AppConfig.fromEnv` reads them. */
const railsOf = (env: Record<string, string>, configured: Option.Option<StripeConfig>) =>
  withEnv(paymentRailsFromEnv(configured), env).pipe(Effect.map((rails) => rails.checkoutRails))

describe("PAYMENT_RAILS", () => {
  it.effect("defaults to stripe when Stripe is configured, to local otherwise", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* railsOf({}, Option.some(stripe)), ["stripe"])
      assert.deepStrictEqual(yield* railsOf({}, Option.none()), ["local"])
      const config = yield* withEnv(AppConfig.fromEnv, {
        STRIPE_SECRET_KEY: "sk_test_x",
        STRIPE_WEBHOOK_SECRET: "whsec_x"
      })
      assert.deepStrictEqual(config.checkoutRails, ["stripe"])
    })
  )

  it.effect("local beside Stripe only when named, in the order named", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* railsOf({ PAYMENT_RAILS: "stripe, local" }, Option.some(stripe)), [
        "stripe",
        "local"
      ])
      assert.deepStrictEqual(yield* railsOf({ PAYMENT_RAILS: "LOCAL" }, Option.some(stripe)), ["local"])
    })
  )

  it.effect("a rail that cannot work stops the start-up", () =>
    Effect.gen(function* () {
      for (const [value, configured] of [
        ["stripe", Option.none()],
        ["paypal", Option.some(stripe)],
        [" , ", Option.none()]
      ] as const) {
        const exit = yield* Effect.exit(railsOf({ PAYMENT_RAILS: value }, configured))
        assert.isTrue(Exit.isFailure(exit), `PAYMENT_RAILS=${value} was accepted`)
      }
    })
  )
})

describe("PAYMENT_RAILS with x402", () => {
  const x402Env = {
    X402_PAY_TO: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    X402_NETWORK: "eip155:31337",
    X402_ASSET: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
    X402_ASSET_NAME: "Test USD",
    X402_ASSET_VERSION: "2",
    X402_FACILITATOR_URL: "http://127.0.0.1:9/facilitator"
  }

  it.effect("offered when configured: unset PAYMENT_RAILS offers it beside the checkout rail", () =>
    Effect.gen(function* () {
      const rails = yield* withEnv(paymentRailsFromEnv(Option.none()), x402Env)
      assert.deepStrictEqual(rails.checkoutRails, ["local"])
      assert.isTrue(Option.isSome(rails.x402))
      if (Option.isNone(rails.x402)) return
      assert.strictEqual(rails.x402.value.atomicPerCredit, 2000)
      assert.strictEqual(rails.x402.value.minCredits, 500)
      assert.deepStrictEqual(rails.x402.value.facilitator, {
        _tag: "Remote",
        url: x402Env.X402_FACILITATOR_URL
      })
      const named = yield* withEnv(paymentRailsFromEnv(Option.none()), { ...x402Env, PAYMENT_RAILS: "x402" })
      assert.deepStrictEqual(named.checkoutRails, ["local"])
      const without = yield* withEnv(paymentRailsFromEnv(Option.none()), {
        ...x402Env,
        PAYMENT_RAILS: "local"
      })
      assert.isTrue(Option.isNone(without.x402))
    })
  )

  it.effect(
    "named without what it needs, the start-up stops with one sentence naming it; the key never shows",
    () =>
      Effect.gen(function* () {
        const message = (env: Record<string, string>) =>
          Effect.flip(withEnv(paymentRailsFromEnv(Option.none()), env)).pipe(
            Effect.map((error) => String(error))
          )
        const bare = yield* message({ PAYMENT_RAILS: "x402" })
        assert.include(bare, "X402_PAY_TO, X402_NETWORK, X402_ASSET, X402_ASSET_NAME, X402_ASSET_VERSION")
        assert.include(bare, "a facilitator")
        const { X402_FACILITATOR_URL: _, ...noFacilitator } = x402Env
        const keyOnly = yield* message({
          ...noFacilitator,
          X402_FACILITATOR_PRIVATE_KEY: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
        })
        assert.include(keyOnly, "X402_RPC_URL")
        assert.notInclude(keyOnly, "59c6995e")
      })
  )

  it.effect(
    "X402_SCHEMES: exact alone by default; upto only with the service's own facilitator; anything else stops the start-up",
    () =>
      Effect.gen(function* () {
        const schemes = (env: Record<string, string>) =>
          withEnv(paymentRailsFromEnv(Option.none()), env).pipe(
            Effect.map((rails) => Option.map(rails.x402, (x402) => x402.upto === true))
          )
        const inProcess = {
          ...x402Env,
          X402_FACILITATOR_URL: "",
          X402_RPC_URL: "http://127.0.0.1:9",
          X402_FACILITATOR_PRIVATE_KEY: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
        }
        assert.deepStrictEqual(yield* schemes(x402Env), Option.some(false))
        assert.deepStrictEqual(
          yield* schemes({ ...inProcess, X402_SCHEMES: "exact,upto" }),
          Option.some(true)
        )
        const refused = (env: Record<string, string>) =>
          Effect.flip(withEnv(paymentRailsFromEnv(Option.none()), env)).pipe(Effect.map(String))
        assert.include(
          yield* refused({ ...x402Env, X402_SCHEMES: "exact,upto" }),
          "X402_SCHEMES names upto, which needs the service's own facilitator"
        )
        for (const value of ["upto", "exact,permit", "exact,,upto"])
          assert.include(yield* refused({ ...inProcess, X402_SCHEMES: value }), "X402_SCHEMES lists")
      })
  )
})

const freshIp = ipSequence("10.71")

/** A local session as one opened before the operator took the local rail away: a row with a token. */
const strandedLocalSession = (accountId: string | null) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const token = `cs_${"L".repeat(43)}`
    const id = `chk_stranded_${crypto.randomUUID().slice(0, 8)}`
    yield* sql`INSERT INTO checkout_sessions (id, token_hash, account_id, pack, rail, status, keyless, expires_at, created_at)
      VALUES (${id}, ${hashSecret(token)}, ${accountId}, 'production', 'local', 'open', ${accountId === null},
        ${Date.now() + 3_600_000}, ${Date.now()})`
    return token
  }).pipe(Effect.orDie)

const stripeByDefault = await Effect.runPromise(railsOf({}, Option.some(stripe)))

describe(`Stripe configured, PAYMENT_RAILS unset (${storeName})`, () => {
  layer(testApp(testOperations, { stripe: Option.some(stripe), checkoutRails: stripeByDefault }), {
    timeout: 60_000,
    excludeTestServices: true
  })((it) => {
    it.effect("checkout goes to Stripe; the local rail is refused with param rail", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const started = yield* startCheckout(app, { pack: "production" }, { key, ip })
        assert.strictEqual(started.rail, "stripe")
        assert.isTrue(started.checkout_url.startsWith(fake.url))
        for (const options of [{ key, ip }, { ip }]) {
          const refused = yield* post(app, "/v1/checkout", { pack: "production", rail: "local" }, options)
          assert.strictEqual(refused.status, 400, JSON.stringify(refused.body))
          assert.strictEqual(refused.body.code, "INVALID_INPUT")
          assert.strictEqual(refused.body.param, "rail")
        }
      })
    )

    it.effect("offers, /upgrade and the checkout of a local session name no local rail", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const capped = yield* app.call("/v1/profnet/test-echo?value=x&limit=11", { key, ip })
        assert.strictEqual(capped.body.code, "TRIAL_CAP_EXCEEDED")
        assert.deepStrictEqual(capped.body.offer.rails, ["stripe"])
        const upgrade = yield* app.call("/upgrade")
        assert.strictEqual(upgrade.status, 200)
        assert.notInclude(String(upgrade.body), "Test-mode")
        assert.notInclude(String(upgrade.body), 'value="local"')
        const form = yield* Effect.promise(() =>
          fetch(`${app.url}/upgrade`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", origin: app.url },
            body: "pack=flex&rail=local",
            redirect: "manual"
          }).then((response) => response.status)
        )
        assert.strictEqual(form, 400)
      })
    )

    it.effect("a local session cannot be paid: no plan, no credits (the audit's free 75,000)", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        for (const accountId of [account_id, null]) {
          const token = yield* strandedLocalSession(accountId)
          const paid = yield* pay(app, `http://svc.test/checkout/${token}`)
          assert.strictEqual(paid.status, 404)
          const page = yield* app.call(`/checkout/${token}`)
          assert.strictEqual(page.status, 404)
          const read = yield* app.call(`/v1/checkout/${token}`)
          assert.notStrictEqual(read.body.status, "paid")
          assert.isUndefined(read.body.api_key)
          const sql = yield* SqlClient.SqlClient
          yield* sql`DELETE FROM checkout_sessions WHERE rail = 'local'`.pipe(Effect.orDie)
        }
        const money = yield* moneyOf(account_id)
        assert.strictEqual(money.balance, 0)
        assert.strictEqual(money.purchases, 0)
        const usage = yield* app.call("/v1/usage", { key, ip })
        assert.strictEqual(usage.body.plan, "trial")
      })
    )
  })
})

describe(`PAYMENT_RAILS=stripe,local beside Stripe (${storeName})`, () => {
  layer(testApp(testOperations, { stripe: Option.some(stripe), checkoutRails: ["stripe", "local"] }), {
    timeout: 60_000,
    excludeTestServices: true
  })((it) => {
    it.effect("local is offered second and its page says test mode", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const byDefault = yield* startCheckout(app, { pack: "flex" }, { key, ip })
        assert.strictEqual(byDefault.rail, "stripe")
        const local = yield* startCheckout(app, { pack: "flex", rail: "local" }, { key, ip })
        assert.strictEqual(local.rail, "local")
        const page = yield* app.call(new URL(local.checkout_url).pathname)
        assert.strictEqual(page.status, 200)
        assert.include(String(page.body), "test mode")
        const upgrade = yield* app.call("/upgrade")
        assert.include(String(upgrade.body), "Test-mode checkout")
      })
    )
  })
})
