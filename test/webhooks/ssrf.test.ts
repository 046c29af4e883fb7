import { afterAll, assert, beforeAll, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { post } from "../identity/support.ts"
import { freshDatabase, storeName } from "../support/database.ts"
import { documentServer } from "../support/documentServer.ts"
import { startReceiver, verified } from "../support/webhookReceiver.ts"
import { changingResolver, eventually, instance, ownerOn } from "./support.ts"

const policy = { ...defaultPolicy, webhooks: { ...defaultPolicy.webhooks, timeoutMs: 2_000 } }
const receiver = await startReceiver()
afterAll(() => receiver.close())

/** An https receiver on loopback with a certificate for agent.test (trusted by this process only). */
const tlsBodies: Array<{ id: string; body: string; signature: string; timestamp: string }> = []
let tls: Awaited<ReturnType<typeof documentServer>>
beforeAll(async () => {
  tls = await documentServer({
    "/hook": (request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        tlsBodies.push({
          id: String(request.headers["webhook-id"]),
          signature: String(request.headers["webhook-signature"]),
          timestamp: String(request.headers["webhook-timestamp"]),
          body: Buffer.concat(chunks).toString("utf8")
        })
        response.writeHead(200).end("ok")
      })
    }
  })
})
afterAll(() => tls.close())

const loopback = [{ address: "127.0.0.1", family: 4 }]
const publicAnswer = [{ address: "93.184.216.34", family: 4 }]

describe(`webhook URLs reach public addresses only (${storeName})`, () => {
  layer(freshDatabase.pipe(Layer.provideMerge(AppConfig.layerTest())), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect(
      "at creation: http, loopback, private, link-local, unspecified and mixed answers are refused",
      () =>
        Effect.gen(function* () {
          const names = changingResolver({
            localhost: loopback,
            "private.test": [{ address: "10.1.2.3", family: 4 }],
            "metadata.test": [{ address: "169.254.169.254", family: 4 }],
            "mixed.test": [...publicAnswer, { address: "192.168.1.20", family: 4 }],
            "mapped.test": [{ address: "::ffff:127.0.0.1", family: 6 }],
            "public.test": publicAnswer
          })
          const app = yield* instance({ policy }, names.resolve)
          const who = yield* ownerOn(app, "ssrf-create@example.com")
          const as = { key: who.token, ip: who.ip }
          const refused = [
            [receiver.url("/x"), "https://"],
            [`https://127.0.0.1:${receiver.port}/x`, "not a public address"],
            [`https://localhost:${receiver.port}/x`, "not a public address"],
            [`https://[::1]:${receiver.port}/x`, "not a public address"],
            ["https://0.0.0.0/x", "not a public address"],
            ["https://169.254.169.254/latest/meta-data", "not a public address"],
            ["https://private.test/x", "not a public address"],
            ["https://metadata.test/x", "not a public address"],
            ["https://mixed.test/x", "192.168.1.20"],
            ["https://mapped.test/x", "not a public address"],
            ["https://nowhere.test/x", "does not resolve"]
          ] as const
          for (const [url, why] of refused) {
            const reply = yield* post(app, "/v1/webhooks", { url, events: ["key.created"] }, as)
            assert.strictEqual(reply.status, 400, url)
            assert.deepInclude(reply.body, { code: "INVALID_INPUT", param: "url" }, url)
            assert.include(reply.body.detail, why, url)
          }
          const sql = yield* SqlClient.SqlClient
          const stored = yield* Effect.orDie(sql`SELECT count(*) AS n FROM webhook_endpoints`)
          assert.strictEqual(Number(stored[0]!.n), 0)
          // A public answer is accepted.
          const accepted = yield* post(
            app,
            "/v1/webhooks",
            { url: "https://public.test/hook", events: ["key.created"] },
            as
          )
          assert.strictEqual(accepted.status, 201, JSON.stringify(accepted.body))
          yield* app.stop
        })
    )

    it.effect(
      "at every delivery: a name that resolved to a public address and now to loopback is refused, unconnected",
      () =>
        Effect.gen(function* () {
          const names = changingResolver({ "flip.test": publicAnswer })
          const app = yield* instance({ policy }, names.resolve)
          const who = yield* ownerOn(app, "ssrf-flip@example.com")
          const as = { key: who.token, ip: who.ip }
          const created = yield* post(
            app,
            "/v1/webhooks",
            { url: `https://flip.test:${receiver.port}/flip`, events: ["key.created"] },
            as
          )
          assert.strictEqual(created.status, 201, JSON.stringify(created.body))
          // The name now answers with the service's own machine (DNS rebinding).
          names.answers["flip.test"] = loopback
          yield* post(app, "/v1/keys", { label: "rebind" }, as)
          const deliveries = yield* eventually(
            app.call(`/v1/webhooks/${created.body.webhook_id}/deliveries`, as),
            (reply) => reply.body.attempts?.length > 0,
            "an attempt"
          )
          assert.deepInclude(deliveries.body.attempts[0], { status: "failed", response_code: null })
          assert.include(deliveries.body.attempts[0].error, "127.0.0.1, which is not a public address")
          assert.strictEqual(receiver.received.filter((request) => request.path === "/flip").length, 0)
          assert.strictEqual(deliveries.body.pending.length, 1, "retried later: the answer may change back")
          yield* app.stop
        })
    )

    it.effect(
      "WEBHOOK_ALLOW_PRIVATE_URLS: delivered over https to the checked address, with the name's certificate",
      () =>
        Effect.gen(function* () {
          const names = changingResolver({ "agent.test": loopback, "other.test": loopback })
          const app = yield* instance({ policy, webhookAllowPrivateUrls: true }, names.resolve)
          const who = yield* ownerOn(app, "ssrf-tls@example.com")
          const as = { key: who.token, ip: who.ip }
          const good = yield* post(
            app,
            "/v1/webhooks",
            { url: `https://agent.test:${tls.port}/hook`, events: ["key.created"] },
            as
          )
          assert.strictEqual(good.status, 201, JSON.stringify(good.body))
          // The certificate does not name other.test: the TLS check fails the attempt.
          const wrongName = yield* post(
            app,
            "/v1/webhooks",
            { url: `https://other.test:${tls.port}/hook`, events: ["key.created"] },
            as
          )
          yield* post(app, "/v1/keys", { label: "tls" }, as)
          yield* eventually(
            Effect.sync(() => tlsBodies.length),
            (n) => n >= 1,
            "the https delivery"
          )
          const event = verified(good.body.secret, { ...tlsBodies[0]!, path: "/hook", headers: {}, at: 0 })
          assert.strictEqual(event.type, "key.created")
          const failed = yield* eventually(
            app.call(`/v1/webhooks/${wrongName.body.webhook_id}/deliveries`, as),
            (reply) => reply.body.attempts?.length > 0,
            "the refused attempt"
          )
          assert.strictEqual(failed.body.attempts[0].status, "failed")
          assert.match(failed.body.attempts[0].error, /altnames|certificate|other\.test/i)
          assert.strictEqual(tlsBodies.length, 1)
          yield* app.stop
        })
    )
  })
})
