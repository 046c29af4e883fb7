import { randomBytes } from "node:crypto"
import { afterAll, assert, describe, layer, it as plain } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { webhookEventTypes } from "../../src/domain/webhooks.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { Checkout } from "../../src/payments/Checkout.ts"
import { WebhookEvents } from "../../src/services/WebhookEvents.ts"
import { SecretBox } from "../../src/webhooks/SecretBox.ts"
import { buy } from "../billing/support.ts"
import { post, signIn, spend } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { startReceiver, verified } from "../support/webhookReceiver.ts"
import { eventually } from "./support.ts"

const receiver = await startReceiver()
afterAll(() => receiver.close())
const every = webhookEventTypes.filter((type) => type !== "ping")

/** The events an endpoint at `path` got, verified and in order. */
const eventsAt = (path: string, secret: string) =>
  receiver.received.filter((request) => request.path === path).map((request) => verified(secret, request))

const waitForType = (path: string, secret: string, type: string, count = 1) =>
  eventually(
    Effect.sync(() => eventsAt(path, secret).filter((event) => event.type === type)),
    (found) => found.length >= count,
    `${count} ${type} at ${path}`
  )

/** A claimed, paid account (flex bought on the local rail) with a webhook for every event at `path`. */
const subscribed = (email: string, path: string) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const ip = `10.90.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`
    const minted = yield* app.mint(ip)
    const token = (yield* signIn(app, email, { key: minted.key, ip })).management_token
    const hook = yield* post(
      app,
      "/v1/webhooks",
      { url: receiver.url(path), events: every },
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

describe(`webhook events, each queued with the change that caused it (${storeName})`, () => {
  layer(testApp(testOperations, { webhookAllowPrivateUrls: true }), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect("credits.purchased, balance.low once per crossing, subscription.renewed and .ended", () =>
      Effect.gen(function* () {
        const who = yield* subscribed("events-money@example.com", "/money")
        yield* buy(who.app, "flex", { key: who.key, ip: who.ip })
        const [purchased] = yield* waitForType("/money", who.secret, "credits.purchased")
        assert.deepInclude(purchased!.data, {
          pack: "flex",
          rail: "local",
          credits: 10_000,
          price_usd_cents: 2_000,
          currency: "usd"
        })
        assert.match(purchased!.data.purchase_id, /^pur_/)

        // The claim grant (10,000) and the pack (10,000): 20,000 spendable; the alert at 19,990.
        const alert = yield* post(who.app, "/v1/alert", { threshold: 19_990 }, { key: who.token, ip: who.ip })
        assert.strictEqual(alert.status, 200, JSON.stringify(alert.body))
        for (const cost of [5, 10, 10])
          assert.strictEqual((yield* spend(who.app, who.key, who.ip, cost)).status, 200)
        const [low] = yield* waitForType("/money", who.secret, "balance.low")
        assert.deepInclude(low!.data, { threshold: 19_990, spendable_credits: 19_985 })
        assert.match(low!.data.receipt_id, /^rcpt_/)
        yield* Effect.sleep("1500 millis")
        assert.strictEqual(
          eventsAt("/money", who.secret).filter((event) => event.type === "balance.low").length,
          1,
          "one event per crossing, as one email"
        )

        const admin = yield* Admin
        const checkout = yield* Checkout
        yield* buy(who.app, "production", { key: who.key, ip: who.ip })
        yield* Effect.orDie(admin.renew(who.accountId))
        const [renewed] = yield* waitForType("/money", who.secret, "subscription.renewed")
        assert.deepInclude(renewed!.data, { pack: "production", rail: "local", periods: 2 })
        yield* Effect.orDie(checkout.cancelAtPeriodEnd(who.accountId))
        yield* Effect.orDie(admin.renew(who.accountId))
        const [ended] = yield* waitForType("/money", who.secret, "subscription.ended")
        assert.deepInclude(ended!.data, { pack: "production", rail: "local" })
        // Two packs bought and one renewal: three credits.purchased.
        yield* waitForType("/money", who.secret, "credits.purchased", 3)
      })
    )

    it.effect("key.cap_reached: once per key, period and cap, at the first call the cap refuses", () =>
      Effect.gen(function* () {
        const who = yield* subscribed("events-cap@example.com", "/cap")
        const sql = yield* SqlClient.SqlClient
        const keys = yield* who.app.call("/v1/keys", { key: who.token, ip: who.ip })
        const keyId = keys.body.keys[0].key_id as string
        yield* Effect.orDie(
          sql`UPDATE api_keys SET spend_cap_credits = 10, cap_period = 'day' WHERE id = ${keyId}`
        )
        assert.strictEqual((yield* spend(who.app, who.key, who.ip, 6)).status, 200)
        for (let n = 0; n < 3; n++) {
          const refused = yield* spend(who.app, who.key, who.ip, 6)
          assert.strictEqual(refused.status, 402)
          assert.strictEqual(refused.body.limit, "key_cap")
        }
        const [reached] = yield* waitForType("/cap", who.secret, "key.cap_reached")
        assert.deepInclude(reached!.data, {
          key_id: keyId,
          cap_key_id: keyId,
          spend_cap_credits: 10,
          cap_period: "day"
        })
        assert.isString(reached!.data.cap_resets_at)
        // A raised cap that is reached again is a new event.
        yield* Effect.orDie(sql`UPDATE api_keys SET spend_cap_credits = 14 WHERE id = ${keyId}`)
        assert.strictEqual((yield* spend(who.app, who.key, who.ip, 6)).status, 200)
        assert.strictEqual((yield* spend(who.app, who.key, who.ip, 6)).status, 402)
        yield* waitForType("/cap", who.secret, "key.cap_reached", 2)
        yield* Effect.sleep("1500 millis")
        assert.strictEqual(
          eventsAt("/cap", who.secret).filter((event) => event.type === "key.cap_reached").length,
          2
        )
      })
    )

    it.effect(
      "an event rolls back with its change; an account without a subscribed endpoint stores none",
      () =>
        Effect.gen(function* () {
          const who = yield* subscribed("events-rollback@example.com", "/rollback")
          const sql = yield* SqlClient.SqlClient
          const events = yield* WebhookEvents
          const count = Effect.map(
            Effect.orDie(sql`SELECT count(*) AS n FROM webhook_events WHERE account_id = ${who.accountId}`),
            (rows) => Number(rows[0]!.n)
          )
          const before = yield* count
          const failed = yield* Effect.exit(
            sql.withTransaction(
              Effect.andThen(
                events.emit(who.accountId, "key.created", { key_id: "key_never" }),
                Effect.fail("the change failed")
              )
            )
          )
          assert.strictEqual(failed._tag, "Failure")
          assert.strictEqual(yield* count, before, "nothing queued by a rolled-back change")
          const queued = yield* Effect.orDie(
            events.emit(who.accountId, "key.created", { key_id: "key_kept" })
          )
          assert.match(queued!, /^msg_/)
          assert.strictEqual(yield* count, before + 1)

          const app = yield* TestApp
          const lonely = yield* app.mint("10.90.250.250")
          const none = yield* Effect.orDie(events.emit(lonely.account_id, "key.created", { key_id: "key_x" }))
          assert.isUndefined(none)
          const rows = yield* Effect.orDie(
            sql`SELECT count(*) AS n FROM webhook_events WHERE account_id = ${lonely.account_id}`
          )
          assert.strictEqual(Number(rows[0]!.n), 0)
        })
    )
  })
})

describe("the signing secret at rest", () => {
  plain.effect("sealed with AES-256-GCM: opens with its key and its row only", () =>
    Effect.gen(function* () {
      const key = randomBytes(32)
      const box = SecretBox.make(key)
      const secret = `whsec_${randomBytes(32).toString("base64")}`
      const sealed = box.seal(secret, "wh_one")
      assert.notInclude(sealed, secret.slice(6))
      assert.notStrictEqual(box.seal(secret, "wh_one"), sealed, "a fresh IV each time")
      assert.strictEqual(yield* box.open(sealed, "wh_one"), secret)
      const moved = yield* Effect.flip(box.open(sealed, "wh_two"))
      assert.include(moved.message, "does not authenticate")
      const tampered = `${sealed.slice(0, -4)}AAAA`
      assert.strictEqual((yield* Effect.flip(box.open(tampered, "wh_one")))._tag, "SecretUnreadable")
      const otherKey = yield* Effect.flip(SecretBox.make(randomBytes(32)).open(sealed, "wh_one"))
      assert.include(otherKey.message, "WEBHOOK_SECRET_KEY")
    })
  )
})
