import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { post } from "../identity/support.ts"
import { freshDatabase, storeName } from "../support/database.ts"
import { type Behaviour, type Received, startReceiver, verified } from "../support/webhookReceiver.ts"
import { eventually, instance, ownerOn } from "./support.ts"

const policy = {
  ...defaultPolicy,
  webhooks: { ...defaultPolicy.webhooks, retryFirstMs: 200, retryMaxMs: 500, timeoutMs: 4_000 }
}
const config = { policy, webhookAllowPrivateUrls: true }

const behaviours = new Map<string, (request: Received) => Behaviour>()
const receiver = await startReceiver((request) => behaviours.get(request.path)?.(request) ?? { status: 200 })
afterAll(() => receiver.close())
const at = (path: string) => receiver.received.filter((request) => request.path === path)
const received = (path: string, n: number, what: string) =>
  eventually(
    Effect.sync(() => at(path).length),
    (count) => count >= n,
    what
  )

const deliveryStates = (endpointId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* Effect.orDie(
      sql`SELECT state FROM webhook_deliveries WHERE endpoint_id = ${endpointId} ORDER BY created_at`
    )
    return rows.map((row) => String(row.state))
  })

describe(`no webhook event is lost when a side restarts (${storeName})`, () => {
  layer(freshDatabase.pipe(Layer.provideMerge(AppConfig.layerTest())), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect("the receiver down, then up again on its port: delivered, with the same webhook-id", () =>
      Effect.gen(function* () {
        const app = yield* instance(config)
        const who = yield* ownerOn(app, "restart-receiver@example.com")
        const as = { key: who.token, ip: who.ip }
        const down = yield* Effect.promise(() => startReceiver())
        const port = down.port
        const hook = yield* post(app, "/v1/webhooks", { url: down.url("/back"), events: ["key.created"] }, as)
        yield* Effect.promise(() => down.close())
        yield* post(app, "/v1/keys", { label: "while-down" }, as)
        const failed = yield* eventually(
          app.call(`/v1/webhooks/${hook.body.webhook_id}/deliveries`, as),
          (reply) => reply.body.attempts.length >= 1,
          "a refused attempt"
        )
        assert.strictEqual(failed.body.attempts[0].status, "failed")
        assert.match(failed.body.attempts[0].error, /ECONNREFUSED/)
        const up = yield* Effect.promise(() => startReceiver(undefined, port))
        yield* Effect.promise(() => up.waitFor((all) => all.length >= 1))
        const event = verified(hook.body.secret, up.received[0]!)
        assert.strictEqual(event.type, "key.created")
        assert.strictEqual(up.received[0]!.id, failed.body.attempts[0].event_id)
        yield* eventually(
          deliveryStates(hook.body.webhook_id),
          (states) => states[0] === "delivered",
          "recorded"
        )
        yield* Effect.promise(() => up.close())
        yield* app.stop
      })
    )

    it.effect(
      "the service stopped mid-delivery (and one that died holding its lease): another instance delivers it",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const first = yield* instance(config)
          const who = yield* ownerOn(first, "restart-service@example.com")
          const as = { key: who.token, ip: who.ip }
          behaviours.set("/restart", () => (at("/restart").length === 1 ? { hang: true } : { status: 200 }))
          const hook = yield* post(
            first,
            "/v1/webhooks",
            { url: receiver.url("/restart"), events: ["key.created"] },
            as
          )
          yield* post(first, "/v1/keys", { label: "mid-delivery" }, as)
          yield* received("/restart", 1, "the first attempt")
          // The instance goes away while the receiver still holds its request.
          yield* first.stop
          // As if it had died without a word: its lease on the endpoint is still held for 1.5 s.
          const leaseEnds = Date.now() + 1_500
          yield* Effect.orDie(
            sql`UPDATE webhook_endpoints SET lease_token = 'lease_of_a_dead_instance', locked_until = ${leaseEnds}
              WHERE id = ${hook.body.webhook_id}`
          )
          const second = yield* instance(config)
          yield* received("/restart", 2, "the attempt of the other instance")
          const [lost, redone] = at("/restart")
          assert.isAtLeast(redone!.at, leaseEnds - 50, "not before the dead instance's lease ran out")
          assert.strictEqual(redone!.id, lost!.id, "the same webhook-id")
          assert.strictEqual(redone!.body, lost!.body)
          assert.strictEqual(verified(hook.body.secret, redone!).type, "key.created")
          yield* eventually(
            deliveryStates(hook.body.webhook_id),
            (states) => states[0] === "delivered",
            "recorded"
          )
          receiver.release()
          yield* second.stop
        })
    )

    it.effect.runIf(storeName === "postgres")(
      "PostgreSQL drops every connection mid-delivery: the delivery is recorded once it is back (PostgreSQL only)",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const app = yield* instance(config)
          const who = yield* ownerOn(app, "restart-postgres@example.com")
          const as = { key: who.token, ip: who.ip }
          behaviours.set("/pg", () => (at("/pg").length === 1 ? { hang: true } : { status: 200 }))
          const hook = yield* post(
            app,
            "/v1/webhooks",
            { url: receiver.url("/pg"), events: ["key.created"] },
            as
          )
          yield* post(app, "/v1/keys", { label: "pg-restart" }, as)
          yield* received("/pg", 1, "the attempt")
          // What the service sees of a PostgreSQL restart: every connection of its database killed.
          const killed = yield* Effect.orDie(
            sql`SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()`
          )
          assert.isAtLeast(Number(killed[0]!.n), 1)
          receiver.release(200)
          yield* eventually(
            deliveryStates(hook.body.webhook_id),
            (states) => states[0] === "delivered",
            "the delivery recorded after the restart"
          )
          // At least once: every request the receiver got carries the one event id.
          assert.deepStrictEqual([...new Set(at("/pg").map((request) => request.id))].length, 1)
          yield* app.stop
        })
    )

    it.effect("two instances: one request at a time per endpoint, each event delivered once", () =>
      Effect.gen(function* () {
        const a = yield* instance(config)
        const b = yield* instance(config)
        const who = yield* ownerOn(a, "two-instances@example.com")
        const as = { key: who.token, ip: who.ip }
        behaviours.set("/one", () => ({ delayMs: 20, status: 200 }))
        behaviours.set("/two", () => ({ delayMs: 20, status: 200 }))
        for (const path of ["/one", "/two"]) {
          const created = yield* post(
            b,
            "/v1/webhooks",
            { url: receiver.url(path), events: ["key.created"] },
            as
          )
          assert.strictEqual(created.status, 201)
        }
        const keys = 12
        yield* Effect.forEach(
          Array.from({ length: keys }, (_, n) => n),
          (n) => post(n % 2 === 0 ? a : b, "/v1/keys", { label: `k${n}` }, as),
          { concurrency: 4 }
        )
        yield* received("/one", keys, "every event at /one")
        yield* received("/two", keys, "every event at /two")
        yield* Effect.sleep("500 millis")
        for (const path of ["/one", "/two"]) {
          assert.strictEqual(receiver.mostInFlight(path), 1, `${path}: never two requests at once`)
          const ids = at(path).map((request) => request.id)
          assert.strictEqual(ids.length, keys, `${path}: no event sent twice`)
          assert.strictEqual(new Set(ids).size, keys)
        }
        yield* a.stop
        yield* b.stop
      })
    )
  })
})
