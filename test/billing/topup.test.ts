import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { mailTo, post, signIn, spend } from "../identity/support.ts"
import { type Reply, TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { signedDelivery, startStripeFake, stripeEvent } from "../support/stripeFake.ts"
import { testOperations } from "../support/testOperations.ts"
import { startReceiver, verified } from "../support/webhookReceiver.ts"
import { eventually } from "../webhooks/support.ts"
import { buy, moneyOf } from "./support.ts"

const receiver = await startReceiver()
const fake = await startStripeFake()
afterAll(() => Promise.all([receiver.close(), fake.close()]))

const policy = {
  ...defaultPolicy,
  topup: { ...defaultPolicy.topup, retryAfterFailureMs: 1, chargeAttempts: 2 }
}

let ips = 0
const nextIp = () => `10.91.${Math.floor(++ips / 250)}.${ips % 250}`

/** A claimed account (the 10,000-credit grant) with a webhook for the top-up events at `path`. */
const owner = (email: string, path: string) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const ip = nextIp()
    const minted = yield* app.mint(ip)
    const token = (yield* signIn(app, email, { key: minted.key, ip })).management_token
    const hook = yield* post(
      app,
      "/v1/webhooks",
      { url: receiver.url(path), events: ["topup.succeeded", "topup.failed", "credits.purchased"] },
      { key: token, ip }
    )
    assert.strictEqual(hook.status, 201, JSON.stringify(hook.body))
    return {
      app,
      ip,
      key: minted.key,
      accountId: minted.account_id,
      token,
      secret: hook.body.secret as string
    }
  })

type Owner = Effect.Success<ReturnType<typeof owner>>

const setTopup = (who: Owner, body: Record<string, unknown>) =>
  post(who.app, "/v1/topup", body, { key: who.token, ip: who.ip })

const showTopup = (who: Owner) =>
  Effect.map(who.app.call("/v1/topup", { key: who.token, ip: who.ip }), (reply) => reply.body)

const charge = (who: Owner, cost: number) =>
  Effect.map(spend(who.app, who.key, who.ip, cost), (reply: Reply) => {
    assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
    return reply
  })

const topupRows = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* Effect.orDie(
      sql`SELECT id, state, price_usd_cents, payment_ref, error, attempts, locked_until FROM topups WHERE account_id = ${accountId}
        ORDER BY created_at, id`
    )
  })

const eventsAt = (path: string, secret: string) =>
  receiver.received.filter((request) => request.path === path).map((request) => verified(secret, request))

describe(`automatic top-up on the local rail (${storeName})`, () => {
  layer(testApp(testOperations, { webhookAllowPrivateUrls: true, policy }), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect(
      "a charge that leaves the credits below the line buys one pack at once; the month's maximum holds",
      () =>
        Effect.gen(function* () {
          const who = yield* owner("topup-local@example.com", "/local")
          // A paid account: the grant (10,000) and a flex pack (10,000). A trial account's calls draw
          // on the free budget first, which the line does not count.
          yield* buy(who.app, "flex", { key: who.key, ip: who.ip })
          const armed = yield* setTopup(who, {
            pack: "flex",
            below_credits: 19_995,
            monthly_max_usd_cents: 4_000
          })
          assert.strictEqual(armed.status, 200, JSON.stringify(armed.body))
          assert.deepInclude(armed.body, {
            account_id: who.accountId,
            enabled: true,
            pack: "flex",
            credits: 10_000,
            price_usd_cents: 2_000,
            below_credits: 19_995,
            monthly_max_usd_cents: 4_000,
            month_spent_usd_cents: 0,
            failures_in_a_row: 0,
            last_topup: null
          })
          // 20,000 - 4: still above the line; then - 4 more: below it.
          yield* charge(who, 4)
          assert.strictEqual((yield* topupRows(who.accountId)).length, 0)
          yield* charge(who, 4)
          const paid = yield* eventually(
            showTopup(who),
            (view) => view.last_topup?.state === "succeeded",
            "the top-up"
          )
          assert.deepInclude(paid.last_topup, {
            rail: "local",
            credits: 10_000,
            price_usd_cents: 2_000,
            error: null
          })
          assert.strictEqual(paid.month_spent_usd_cents, 2_000)
          const money = yield* moneyOf(who.accountId)
          assert.deepInclude(money, { balance: 20_000, purchases: 2, purchased: 20_000, plan: "flex" })
          const [row] = yield* topupRows(who.accountId)
          assert.strictEqual(row!.payment_ref, `topup:${row!.id}`)

          const usage = yield* who.app.call("/v1/usage", { key: who.key, ip: who.ip })
          assert.deepStrictEqual(usage.body.topup, {
            enabled: true,
            pack: "flex",
            below_credits: 19_995,
            monthly_max_usd_cents: 4_000,
            month_spent_usd_cents: 2_000
          })
          const events = yield* eventually(
            Effect.sync(() => eventsAt("/local", who.secret)),
            (all) =>
              all.some((event) => event.type === "topup.succeeded") &&
              all.some((e) => e.type === "credits.purchased"),
            "the top-up's events"
          )
          const succeeded = events.find((event) => event.type === "topup.succeeded")!
          assert.deepInclude(succeeded.data, {
            topup_id: row!.id,
            credits: 10_000,
            price_usd_cents: 2_000,
            rail: "local",
            month_spent_usd_cents: 2_000
          })

          // Well above the line now: no top-up.
          yield* charge(who, 4)
          assert.strictEqual((yield* topupRows(who.accountId)).length, 1)

          // A line above everything: every charge wants one, the maximum allows one more (4,000 cents).
          yield* setTopup(who, { below_credits: 1_000_000, monthly_max_usd_cents: 4_000 })
          for (let n = 0; n < 6; n++) {
            yield* charge(who, 4)
            yield* eventually(
              topupRows(who.accountId),
              (rows) => rows.every((r) => r.state !== "pending"),
              "settled"
            )
          }
          const rows = yield* topupRows(who.accountId)
          assert.deepStrictEqual(
            rows.map((r) => r.state),
            ["succeeded", "succeeded"],
            "two packs: never past the month's maximum"
          )
          const view = yield* showTopup(who)
          assert.strictEqual(view.month_spent_usd_cents, 4_000)
          assert.strictEqual((yield* moneyOf(who.accountId)).purchases, 3)

          const off = yield* setTopup(who, { enabled: false })
          assert.strictEqual(off.status, 200)
          assert.isFalse(off.body.enabled)
        })
    )

    it.effect("every refusal is a problem naming its field; a spend key cannot arm it", () =>
      Effect.gen(function* () {
        const who = yield* owner("topup-rules@example.com", "/rules")
        const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
          [{ pack: "production", below_credits: 100, monthly_max_usd_cents: 50_000 }, "pack"],
          [{ pack: "nope", below_credits: 100, monthly_max_usd_cents: 50_000 }, "pack"],
          [{ below_credits: 100, monthly_max_usd_cents: 1_999 }, "monthly_max_usd_cents"],
          [{ monthly_max_usd_cents: 5_000 }, "below_credits"],
          [{ below_credits: 100 }, "monthly_max_usd_cents"],
          [{ below_credits: 0, monthly_max_usd_cents: 5_000 }, "below_credits"],
          [{ below_credits: "many", monthly_max_usd_cents: 5_000 }, "below_credits"]
        ]
        for (const [body, param] of cases) {
          const reply = yield* setTopup(who, body)
          assert.strictEqual(reply.status, 400, JSON.stringify(body))
          assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
          assert.deepInclude(reply.body, { code: "INVALID_INPUT", param }, JSON.stringify(body))
        }
        const withKey = yield* post(
          who.app,
          "/v1/topup",
          { below_credits: 100, monthly_max_usd_cents: 5_000 },
          {
            key: who.key,
            ip: who.ip
          }
        )
        assert.strictEqual(withKey.body.code, "AUTH_REQUIRED")
        assert.isFalse((yield* showTopup(who)).enabled)
      })
    )

    it.effect("the database keeps one open top-up per account, whatever arms it", () =>
      Effect.gen(function* () {
        const who = yield* owner("topup-unique@example.com", "/unique")
        const sql = yield* SqlClient.SqlClient
        const insert = (id: string) =>
          sql`INSERT INTO topups (id, account_id, call_id, month, pack, credits, price_usd_cents,
              monthly_max_usd_cents, state, next_attempt_at, created_at)
            VALUES (${id}, ${who.accountId}, ${id}, '2099-01', 'flex', 10000, 2000, 4000, 'charging', 0, 0)`
        yield* Effect.orDie(insert("topup_first"))
        const second = yield* Effect.exit(insert("topup_second"))
        assert.strictEqual(second._tag, "Failure", "a second open top-up is refused by the unique index")
      })
    )
  })
})

const webhookSecret = "whsec_test_topups_0123456789"
const stripeConfig = {
  webhookAllowPrivateUrls: true,
  policy,
  stripe: Option.some({
    secretKey: Redacted.make("sk_test_fake"),
    webhookSecret: Redacted.make(webhookSecret),
    prices: { flex: undefined, production: undefined },
    apiUrl: fake.url
  }),
  checkoutRails: ["stripe"] as const
}

const deliver = (app: TestApp["Service"], event: unknown) => {
  const signed = signedDelivery(event, webhookSecret)
  return app.call("/v1/webhooks/stripe", {
    method: "POST",
    headers: { "content-type": "application/json", "stripe-signature": signed.signature },
    body: signed.payload
  })
}

/** A flex pack bought by Stripe Checkout (which saves the card for future use); the customer id. */
const boughtOnStripe = (who: Owner, options: { readonly declines?: boolean } = {}) =>
  Effect.gen(function* () {
    const started = yield* post(who.app, "/v1/checkout", { pack: "flex" }, { key: who.key, ip: who.ip })
    assert.strictEqual(started.status, 200, JSON.stringify(started.body))
    const session = fake.objects.get(String(started.body.checkout_url).split("/").pop()!) as Record<
      string,
      any
    >
    const created = fake.requests.findLast((request) => request.path === "/v1/checkout/sessions")!
    assert.strictEqual(created.form["payment_intent_data[setup_future_usage]"], "off_session")
    const paid = yield* deliver(
      who.app,
      stripeEvent("checkout.session.completed", {
        id: session.id,
        object: "checkout.session",
        mode: "payment",
        status: "complete",
        payment_status: "paid",
        client_reference_id: session.client_reference_id,
        metadata: session.metadata,
        customer: session.customer
      })
    )
    assert.strictEqual(paid.status, 200, JSON.stringify(paid.body))
    fake.savePaymentMethod(session.customer, options)
    return session.customer as string
  })

describe(`automatic top-up on Stripe (${storeName})`, () => {
  layer(testApp(testOperations, stripeConfig), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("charged off-session to the saved card, credited only by its verified webhook, once", () =>
      Effect.gen(function* () {
        const who = yield* owner("topup-stripe@example.com", "/stripe")
        // No Stripe customer yet: nothing could pay a top-up.
        const early = yield* setTopup(who, { below_credits: 19_995, monthly_max_usd_cents: 4_000 })
        assert.deepInclude(early.body, { code: "INVALID_INPUT", param: "pack" })
        assert.include(early.body.detail, "checkout")

        const customer = yield* boughtOnStripe(who)
        const armed = yield* setTopup(who, { below_credits: 19_995, monthly_max_usd_cents: 4_000 })
        assert.strictEqual(armed.status, 200, JSON.stringify(armed.body))
        yield* charge(who, 10)
        const charging = yield* eventually(
          showTopup(who),
          (view) => view.last_topup?.state === "charging",
          "the charge"
        )
        const topupId = charging.last_topup.topup_id as string
        const intents = fake.requests.filter((request) => request.path === "/v1/payment_intents")
        assert.strictEqual(intents.length, 1)
        assert.deepInclude(intents[0]!.form, {
          amount: "2000",
          currency: "usd",
          customer,
          off_session: "true",
          confirm: "true",
          "metadata[topup_id]": topupId,
          "metadata[account_id]": who.accountId
        })
        assert.strictEqual(intents[0]!.idempotencyKey, `topup-${topupId}`)
        // Nothing credited before the webhook.
        assert.strictEqual((yield* moneyOf(who.accountId)).purchases, 1)

        const intent = [...fake.objects.values()].find((object) => object.object === "payment_intent")!
        const succeeded = stripeEvent("payment_intent.succeeded", intent)
        for (const event of [succeeded, succeeded, stripeEvent("payment_intent.succeeded", intent)]) {
          const reply = yield* deliver(who.app, event)
          assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
        }
        const view = yield* showTopup(who)
        assert.deepInclude(view.last_topup, { topup_id: topupId, state: "succeeded", rail: "stripe" })
        const money = yield* moneyOf(who.accountId)
        assert.strictEqual(money.purchases, 2, "credited once, however often reported")
        assert.strictEqual(money.purchased, 20_000)
        const [row] = yield* topupRows(who.accountId)
        assert.strictEqual(row!.payment_ref, `stripe:${intent.id}`)
      })
    )

    it.effect(
      "three declines in a row disarm it and email the owner; an unanswered charge is retried with the same key",
      () =>
        Effect.gen(function* () {
          const who = yield* owner("topup-declined@example.com", "/declined")
          yield* boughtOnStripe(who, { declines: true })
          yield* setTopup(who, { below_credits: 1_000_000, monthly_max_usd_cents: 100_000 })
          for (let n = 1; n <= 3; n++) {
            yield* charge(who, 4)
            yield* eventually(showTopup(who), (view) => view.failures_in_a_row === n, `failure ${n}`)
          }
          const view = yield* showTopup(who)
          assert.isFalse(view.enabled, "disarmed")
          assert.deepInclude(view.last_topup, { state: "failed" })
          assert.include(view.last_topup.error, "declined")
          yield* charge(who, 4)
          yield* Effect.sleep("1500 millis")
          assert.strictEqual((yield* topupRows(who.accountId)).length, 3, "no top-up once disarmed")
          const mails = (yield* mailTo("topup-declined@example.com")).filter(
            (mail) => mail.kind === "topup_disarmed"
          )
          assert.strictEqual(mails.length, 1)
          assert.include(mails[0]!.text, "3 automatic top-ups")
          const failures = yield* eventually(
            Effect.sync(() =>
              eventsAt("/declined", who.secret).filter((event) => event.type === "topup.failed")
            ),
            (all) => all.length === 3,
            "three topup.failed events"
          )
          assert.deepStrictEqual(
            failures.map((event) => [event.data.failures_in_a_row, event.data.disarmed]),
            [
              [1, false],
              [2, false],
              [3, true]
            ]
          )
          assert.strictEqual((yield* moneyOf(who.accountId)).purchases, 1, "nothing credited")

          // Stripe unreachable: the same top-up is asked again with the same idempotency key.
          const sql = yield* SqlClient.SqlClient
          fake.savePaymentMethod(
            String(
              (yield* Effect.orDie(
                sql`SELECT customer_id FROM stripe_customers WHERE account_id = ${who.accountId}`
              ))[0]!.customer_id
            )
          )
          yield* setTopup(who, { below_credits: 1_000_000, monthly_max_usd_cents: 100_000 })
          fake.failingPaths.add("/v1/payment_intents")
          yield* charge(who, 4)
          const [pending] = yield* eventually(
            topupRows(who.accountId),
            // The worker has written the unanswered try down (its lease let go); moving the next try
            // before that would be overwritten by the worker's own back-off.
            (rows) =>
              rows.length === 4 &&
              Number(rows[3]!.attempts) === 1 &&
              rows[3]!.locked_until === null &&
              fake.requests.some(
                (r) => r.path === "/v1/payment_intents" && r.idempotencyKey === `topup-${rows[3]!.id}`
              ),
            "the unanswered charge"
          ).pipe(Effect.map((rows) => rows.slice(3)))
          assert.strictEqual(pending!.state, "pending")
          fake.failingPaths.delete("/v1/payment_intents")
          yield* Effect.orDie(sql`UPDATE topups SET next_attempt_at = 0 WHERE id = ${pending!.id}`)
          yield* eventually(
            topupRows(who.accountId),
            (rows) => rows[3]!.state === "charging",
            "the second try"
          )
          const asked = fake.requests.filter(
            (request) =>
              request.path === "/v1/payment_intents" && request.idempotencyKey === `topup-${pending!.id}`
          )
          assert.strictEqual(asked.length, 2, "asked twice, with one idempotency key: one charge at most")
        })
    )
  })
})
