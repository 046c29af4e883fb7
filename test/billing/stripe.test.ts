import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { post, signIn } from "../identity/support.ts"
import { type Reply, TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { signedDelivery, startStripeFake, stripeEvent } from "../support/stripeFake.ts"
import { testOperations } from "../support/testOperations.ts"

const fake = await startStripeFake()
afterAll(() => fake.close())

const webhookSecret = "whsec_test_0123456789abcdef"
const stripeConfig = {
  stripe: Option.some({
    secretKey: Redacted.make("sk_test_fake"),
    webhookSecret: Redacted.make(webhookSecret),
    prices: { flex: undefined, production: "price_production_monthly" },
    apiUrl: fake.url
  }),
  checkoutRails: ["stripe"] as const
}

const day = 86_400
const nowSeconds = () => Math.floor(Date.now() / 1000)

/** Posts a signed delivery to the webhook (or a doctored one). */
const deliver = (
  app: TestApp["Service"],
  event: unknown,
  options: { readonly secret?: string; readonly timestamp?: number; readonly tamper?: boolean } = {}
): Effect.Effect<Reply> => {
  const signed = signedDelivery(event, options.secret ?? webhookSecret, {
    ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp })
  })
  return app.call("/v1/webhooks/stripe", {
    method: "POST",
    headers: { "content-type": "application/json", "stripe-signature": signed.signature },
    body: options.tamper === true ? signed.payload.replace('"paid"', '"PAID"') : signed.payload
  })
}

/** The Checkout Session the fake created for a checkout URL it handed out. */
const fakeSession = (checkoutUrl: string) => {
  const id = checkoutUrl.split("/").pop()!
  const session = fake.objects.get(id)
  if (session === undefined) throw new Error(`the fake has no session ${id}`)
  return session as Record<string, any>
}

/** `checkout.session.completed` for a fake session, as Stripe sends it once paid. */
const completed = (
  session: Record<string, any>,
  extra: { readonly customer?: string; readonly invoice?: string; readonly subscription?: string } = {}
) =>
  stripeEvent("checkout.session.completed", {
    id: session.id,
    object: "checkout.session",
    mode: session.mode,
    status: "complete",
    payment_status: "paid",
    client_reference_id: session.client_reference_id,
    metadata: session.metadata,
    customer: extra.customer ?? session.customer,
    invoice: extra.invoice ?? null,
    subscription: extra.subscription ?? null
  })

/** `invoice.paid` for one monthly period of a subscription (first invoices have period_end = creation). */
const invoicePaid = (input: {
  readonly invoice: string
  readonly subscription: string
  readonly customer: string
  readonly metadata: Record<string, string>
  readonly periodStart: number
}) =>
  stripeEvent("invoice.paid", {
    id: input.invoice,
    object: "invoice",
    status: "paid",
    customer: input.customer,
    period_start: input.periodStart,
    period_end: input.periodStart,
    lines: {
      object: "list",
      data: [
        { id: `il_${input.invoice}`, period: { start: input.periodStart, end: input.periodStart + 30 * day } }
      ]
    },
    parent: {
      type: "subscription_details",
      subscription_details: { subscription: input.subscription, metadata: input.metadata }
    }
  })

const usageOf = (app: TestApp["Service"], key: string, ip: string) =>
  Effect.map(app.call("/v1/usage", { key, ip }), (reply) => {
    assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
    return reply.body as { plan: string; balance: { purchased: number } }
  })

const subscriptionOf = (stripeSubscriptionId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ status: string; current_period_end: number | bigint; periods: number }>`
      SELECT status, current_period_end, periods FROM subscriptions WHERE stripe_subscription_id = ${stripeSubscriptionId}`
    const row = rows[0]
    return row === undefined
      ? undefined
      : { status: row.status, periodEnd: Number(row.current_period_end), periods: Number(row.periods) }
  }).pipe(Effect.orDie)

const purchaseCount = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{
      n: number | bigint | string
    }>`SELECT count(*) AS n FROM purchases WHERE account_id = ${accountId}`
    return Number(rows[0]!.n)
  }).pipe(Effect.orDie)

/** A keyed checkout of `pack` on the Stripe rail. */
const startStripe = (app: TestApp["Service"], pack: string, options: { key?: string; ip: string }) =>
  Effect.map(post(app, "/v1/checkout", { pack, rail: "stripe" }, options), (started) => {
    assert.strictEqual(started.status, 200, JSON.stringify(started.body))
    return started.body as { session_id: string; checkout_url: string; rail: string }
  })

describe(`checkout on the Stripe rail (${storeName})`, () => {
  layer(testApp(testOperations, stripeConfig), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "a keyed flex checkout: a Stripe customer and Checkout Session, credited once by its webhook",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.63.0.1"
          const minted = yield* app.mint(ip)
          const started = yield* startStripe(app, "flex", { key: minted.key, ip })
          assert.strictEqual(started.rail, "stripe")
          assert.isTrue(started.checkout_url.startsWith(`${fake.url}/c/pay/cs_test_`))
          const session = fakeSession(started.checkout_url)
          assert.strictEqual(session.mode, "payment")
          assert.match(session.client_reference_id, /^chk_/)
          assert.deepStrictEqual(session.metadata, {
            checkout_id: session.client_reference_id,
            account_id: minted.account_id
          })
          assert.strictEqual(session.success_url, `http://svc.test/checkout/${started.session_id}`)
          assert.strictEqual(session.cancel_url, `http://svc.test/upgrade?account=${minted.account_id}`)
          assert.strictEqual(
            session.line_items.unit_amount,
            "2000",
            "no flex price id: the price goes inline"
          )
          const customer = fake.objects.get(session.customer)
          assert.strictEqual(customer?.object, "customer")
          const creates = fake.requests.filter((request) => request.path !== "/v1/billing_portal/sessions")
          assert.isTrue(creates.every((request) => request.idempotencyKey !== undefined))
          assert.isTrue(creates.every((request) => request.authorization === "Bearer sk_test_fake"))

          // Nothing is credited before the webhook.
          assert.strictEqual((yield* app.call(`/v1/checkout/${started.session_id}`)).body.status, "open")
          const event = completed(session)
          for (let delivery = 0; delivery < 3; delivery++) {
            const reply = yield* deliver(app, event)
            assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
            assert.strictEqual(reply.body.duplicate, delivery > 0)
          }
          // The same payment reported by another event is still one payment.
          assert.strictEqual((yield* deliver(app, completed(session))).status, 200)
          const usage = yield* usageOf(app, minted.key, ip)
          assert.strictEqual(usage.plan, "flex")
          assert.strictEqual(usage.balance.purchased, 10_000)
          assert.strictEqual(yield* purchaseCount(minted.account_id), 1)
          const read = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.strictEqual(read.body.status, "paid")
          assert.strictEqual(read.body.account_id, minted.account_id)
          assert.isUndefined(read.body.api_key)

          // A second checkout of the same account reuses its Stripe customer.
          const again = yield* startStripe(app, "flex", { key: minted.key, ip })
          assert.strictEqual(fakeSession(again.checkout_url).customer, session.customer)
        })
    )

    it.effect(
      "a tampered, wrongly signed, stale or unsigned delivery is INVALID_INPUT and changes nothing",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.63.0.2"
          const minted = yield* app.mint(ip)
          const started = yield* startStripe(app, "flex", { key: minted.key, ip })
          const event = completed(fakeSession(started.checkout_url))
          const refusals = [
            yield* deliver(app, event, { tamper: true }),
            yield* deliver(app, event, { secret: "whsec_someone_else" }),
            yield* deliver(app, event, { timestamp: nowSeconds() - 3600 }),
            yield* app.call("/v1/webhooks/stripe", {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(event)
            })
          ]
          for (const refused of refusals) {
            assert.strictEqual(refused.status, 400, JSON.stringify(refused.body))
            assert.strictEqual(refused.body.code, "INVALID_INPUT")
            assert.strictEqual(refused.body.param, "Stripe-Signature")
          }
          assert.isUndefined((yield* usageOf(app, minted.key, ip)).balance, "no credits yet")
          // The refused event id was not recorded: its genuine delivery applies.
          const genuine = yield* deliver(app, event)
          assert.strictEqual(genuine.body.duplicate, false)
          assert.strictEqual((yield* usageOf(app, minted.key, ip)).balance.purchased, 10_000)
        })
    )

    it.effect(
      "a keyless production checkout, invoice.paid before checkout.session.completed: one credit, the key once, each period again, then canceled",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.63.0.3"
          const started = yield* startStripe(app, "production", { ip })
          const session = fakeSession(started.checkout_url)
          assert.strictEqual(session.mode, "subscription")
          assert.strictEqual(session.line_items.price, "price_production_monthly")
          assert.isNull(session.customer, "a keyless checkout has no account, so no customer yet")
          assert.deepStrictEqual(session.subscription_metadata, { checkout_id: session.client_reference_id })
          const firstPeriod = nowSeconds()
          const subscription = "sub_fake_keyless"
          const customer = "cus_fake_keyless"
          const first = invoicePaid({
            invoice: "in_fake_keyless_1",
            subscription,
            customer,
            metadata: session.subscription_metadata,
            periodStart: firstPeriod
          })
          assert.strictEqual((yield* deliver(app, first)).status, 200)
          const completion = completed(session, { customer, invoice: "in_fake_keyless_1", subscription })
          assert.strictEqual((yield* deliver(app, completion)).status, 200)

          const read = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.strictEqual(read.body.status, "paid")
          assert.match(read.body.api_key, /^svc_[0-9A-Za-z]{32}$/)
          assert.isUndefined((yield* app.call(`/v1/checkout/${started.session_id}`)).body.api_key)
          const key = read.body.api_key as string
          let usage = yield* usageOf(app, key, ip)
          assert.strictEqual(usage.plan, "production")
          assert.strictEqual(usage.balance.purchased, 75_000)
          const started1 = yield* subscriptionOf(subscription)
          assert.deepStrictEqual(started1, {
            status: "active",
            periodEnd: (firstPeriod + 30 * day) * 1000,
            periods: 1
          })

          const second = invoicePaid({
            invoice: "in_fake_keyless_2",
            subscription,
            customer,
            metadata: session.subscription_metadata,
            periodStart: firstPeriod + 30 * day
          })
          yield* deliver(app, second)
          yield* deliver(app, second)
          usage = yield* usageOf(app, key, ip)
          assert.strictEqual(usage.balance.purchased, 150_000)
          assert.deepStrictEqual(yield* subscriptionOf(subscription), {
            status: "active",
            periodEnd: (firstPeriod + 60 * day) * 1000,
            periods: 2
          })

          // The portal: the new account is a Stripe customer once its key is claimed by a sign-in.
          const signedIn = yield* signIn(app, "stripe-keyless@example.test", { key, ip })
          const accountId = read.body.account_id as string
          const portal = yield* app.call(`/v1/portal?account_id=${accountId}`, {
            method: "POST",
            key: signedIn.management_token,
            ip
          })
          assert.strictEqual(portal.status, 200, JSON.stringify(portal.body))
          assert.isTrue(portal.body.url.startsWith(`${fake.url}/p/session/bps_`), portal.body.url)
          const portalRequest = fake.requests
            .filter((request) => request.path === "/v1/billing_portal/sessions")
            .at(-1)
          assert.strictEqual(portalRequest?.form.customer, customer)

          const deleted = stripeEvent("customer.subscription.deleted", {
            id: subscription,
            object: "subscription",
            status: "canceled",
            customer
          })
          assert.strictEqual((yield* deliver(app, deleted)).status, 200)
          assert.strictEqual((yield* subscriptionOf(subscription))?.status, "canceled")
          // The credits paid for stay; without a subscription the account is on flex (its rate limit).
          const after = yield* usageOf(app, key, ip)
          assert.strictEqual(after.plan, "flex")
          assert.strictEqual(after.balance.purchased, 150_000)
        })
    )

    it.effect(
      "checkout.session.completed before invoice.paid: the first period once, its end taken from the invoice",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.63.0.4"
          const minted = yield* app.mint(ip)
          const started = yield* startStripe(app, "production", { key: minted.key, ip })
          const session = fakeSession(started.checkout_url)
          const subscription = "sub_fake_keyed"
          const periodStart = nowSeconds()
          yield* deliver(app, completed(session, { invoice: "in_fake_keyed_1", subscription }))
          assert.strictEqual((yield* usageOf(app, minted.key, ip)).balance.purchased, 75_000)
          yield* deliver(
            app,
            invoicePaid({
              invoice: "in_fake_keyed_1",
              subscription,
              customer: session.customer,
              metadata: session.subscription_metadata,
              periodStart
            })
          )
          const usage = yield* usageOf(app, minted.key, ip)
          assert.strictEqual(usage.plan, "production")
          assert.strictEqual(usage.balance.purchased, 75_000)
          assert.deepStrictEqual(yield* subscriptionOf(subscription), {
            status: "active",
            periodEnd: (periodStart + 30 * day) * 1000,
            periods: 1
          })
        })
    )

    it.effect(
      "two deliveries of one event at once credit once; so do the two events of one first payment",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.63.0.5"
          const minted = yield* app.mint(ip)
          const flex = yield* startStripe(app, "flex", { key: minted.key, ip })
          const event = completed(fakeSession(flex.checkout_url))
          const replies = yield* Effect.all([deliver(app, event), deliver(app, event)], {
            concurrency: "unbounded"
          })
          assert.deepStrictEqual(
            replies.map((reply) => reply.status),
            [200, 200]
          )
          assert.deepStrictEqual(replies.map((reply) => reply.body.duplicate).sort(), [false, true])
          assert.strictEqual((yield* usageOf(app, minted.key, ip)).balance.purchased, 10_000)

          const production = yield* startStripe(app, "production", { key: minted.key, ip })
          const session = fakeSession(production.checkout_url)
          const subscription = "sub_fake_race"
          const both = yield* Effect.all(
            [
              deliver(app, completed(session, { invoice: "in_fake_race_1", subscription })),
              deliver(
                app,
                invoicePaid({
                  invoice: "in_fake_race_1",
                  subscription,
                  customer: session.customer,
                  metadata: session.subscription_metadata,
                  periodStart: nowSeconds()
                })
              )
            ],
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual(
            both.map((reply) => reply.status),
            [200, 200]
          )
          assert.strictEqual((yield* usageOf(app, minted.key, ip)).balance.purchased, 85_000)
          assert.strictEqual(yield* purchaseCount(minted.account_id), 2)
        })
    )

    it.effect(
      "other event types are acknowledged and ignored; offers list the Stripe rail only; a failing Stripe is UPSTREAM_UNAVAILABLE",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.63.0.6"
          const other = yield* deliver(
            app,
            stripeEvent("customer.created", { id: "cus_other", object: "customer" })
          )
          assert.strictEqual(other.status, 200)
          assert.strictEqual(other.body.duplicate, false)
          const huge = stripeEvent("customer.created", {
            id: "cus_huge",
            object: "customer",
            note: "x".repeat(70_000)
          })
          const tooLarge = yield* deliver(app, huge)
          assert.strictEqual(tooLarge.status, 413, JSON.stringify(tooLarge.body))
          assert.strictEqual(tooLarge.body.code, "PAYLOAD_TOO_LARGE")

          const minted = yield* app.mint(ip)
          const capped = yield* app.call("/v1/profnet/test-echo?value=x&limit=11", { key: minted.key, ip })
          assert.strictEqual(capped.body.code, "TRIAL_CAP_EXCEEDED")
          // Stripe configured and PAYMENT_RAILS unset: Stripe alone (the local rail only when named).
          assert.deepStrictEqual(capped.body.offer.rails, ["stripe"])

          fake.failing = true
          const refused = yield* post(
            app,
            "/v1/checkout",
            { pack: "flex", rail: "stripe" },
            { key: minted.key, ip }
          ).pipe(Effect.ensuring(Effect.sync(() => (fake.failing = false))))
          assert.strictEqual(refused.status, 502, JSON.stringify(refused.body))
          assert.strictEqual(refused.body.code, "UPSTREAM_UNAVAILABLE")
          // Stripe is the only rail: the local one is not offered beside it unless PAYMENT_RAILS names it.
          const local = yield* post(
            app,
            "/v1/checkout",
            { pack: "flex", rail: "local" },
            { key: minted.key, ip }
          )
          assert.strictEqual(local.status, 400)
          assert.strictEqual(local.body.param, "rail")
          // Once Stripe answers again, the default rail (Stripe) starts checkouts again.
          const again = yield* post(app, "/v1/checkout", { pack: "flex" }, { key: minted.key, ip })
          assert.strictEqual(again.status, 200, JSON.stringify(again.body))
          assert.strictEqual(again.body.rail, "stripe")
        })
    )
  })
})

describe(`without Stripe (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("the webhook route does not exist and offers list the local rail only", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const reply = yield* deliver(
          app,
          stripeEvent("customer.created", { id: "cus_x", object: "customer" })
        )
        assert.strictEqual(reply.status, 404)
        assert.strictEqual(reply.body.code, "NOT_FOUND")
        const rail = yield* post(app, "/v1/checkout", { pack: "flex", rail: "stripe" })
        assert.strictEqual(rail.status, 400)
        assert.strictEqual(rail.body.param, "rail")
      })
    )
  })
})
