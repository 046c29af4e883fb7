import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Webhook } from "standardwebhooks"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { mailTo, post, signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { type Behaviour, startReceiver, verified } from "../support/webhookReceiver.ts"

const policy = {
  ...defaultPolicy,
  webhooks: {
    ...defaultPolicy.webhooks,
    retryFirstMs: 300,
    retryMaxMs: 1_000,
    timeoutMs: 1_500,
    tests: { limit: 3, windowMs: 3_600_000 }
  }
}

/** The receivers of this file; each test names what its own answers. */
const behaviours = new Map<string, (n: number) => Behaviour>()
const receiver = await startReceiver((request, n) => behaviours.get(request.path)?.(n) ?? { status: 200 })
afterAll(() => receiver.close())

const until = (predicate: () => boolean, what: string, timeoutMs = 15_000) =>
  Effect.promise(async () => {
    const started = Date.now()
    while (!predicate()) {
      if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  })

const at = (path: string) => receiver.received.filter((request) => request.path === path)

/** A signed-in owner of a claimed account (a minted key claimed by email). */
const owner = (email: string) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const ip = `10.88.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`
    const minted = yield* app.mint(ip)
    const signedIn = yield* signIn(app, email, { key: minted.key, ip })
    return { app, ip, key: minted.key, accountId: minted.account_id, token: signedIn.management_token }
  })

const createHook = (
  who: { readonly app: TestApp["Service"]; readonly token: string; readonly ip: string },
  path: string,
  events: ReadonlyArray<string>
) =>
  Effect.map(
    post(who.app, "/v1/webhooks", { url: receiver.url(path), events }, { key: who.token, ip: who.ip }),
    (reply) => {
      assert.strictEqual(reply.status, 201, JSON.stringify(reply.body))
      return reply.body as { webhook_id: string; secret: string; url: string; events: Array<string> }
    }
  )

describe(`webhook delivery (${storeName})`, () => {
  layer(testApp(testOperations, { webhookAllowPrivateUrls: true, policy }), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect("an event is signed per Standard Webhooks, verifies with the package, and is recorded", () =>
      Effect.gen(function* () {
        const who = yield* owner("hooks-signed@example.com")
        const hook = yield* createHook(who, "/signed", ["key.created", "key.revoked"])
        assert.match(hook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
        assert.deepStrictEqual(hook.events, ["key.created", "key.revoked"])

        const created = yield* post(who.app, "/v1/keys", { label: "ci" }, { key: who.token, ip: who.ip })
        assert.strictEqual(created.status, 201)
        yield* until(() => at("/signed").length === 1, "key.created")
        const [delivery] = at("/signed")
        const event = verified(hook.secret, delivery!)
        assert.strictEqual(event.type, "key.created")
        assert.strictEqual(event.id, delivery!.id)
        assert.match(event.id, /^msg_/)
        assert.strictEqual(event.account_id, who.accountId)
        assert.deepStrictEqual(event.data, {
          key_id: created.body.key_id,
          label: "ci",
          hint: created.body.hint,
          created_at: created.body.created_at
        })
        assert.notInclude(delivery!.body, created.body.key, "never the key's secret")
        assert.strictEqual(delivery!.headers["content-type"], "application/json")
        // A wrong secret or a changed body does not verify.
        assert.throws(() =>
          new Webhook(`whsec_${Buffer.alloc(32, 7).toString("base64")}`).verify(delivery!.body, {
            "webhook-id": delivery!.id,
            "webhook-timestamp": delivery!.timestamp,
            "webhook-signature": delivery!.signature
          })
        )
        assert.throws(() => verified(hook.secret, { ...delivery!, body: delivery!.body.replace("ci", "cj") }))

        // Not subscribed: no delivery for credits.purchased; subscribed: key.revoked.
        const revoked = yield* post(
          who.app,
          "/v1/keys/revoke",
          { key_id: created.body.key_id },
          { key: who.token, ip: who.ip }
        )
        assert.strictEqual(revoked.status, 200)
        yield* until(() => at("/signed").length === 2, "key.revoked")
        const second = verified(hook.secret, at("/signed")[1]!)
        assert.strictEqual(second.type, "key.revoked")
        assert.deepStrictEqual(second.data, {
          key_id: created.body.key_id,
          revoked_at: revoked.body.revoked_at,
          reason: "revoked"
        })

        // The receiver answered before the attempt was recorded: wait for the record.
        const listed = yield* Effect.gen(function* () {
          for (;;) {
            const reply = yield* who.app.call("/v1/webhooks", { key: who.token, ip: who.ip })
            if (reply.body.webhooks[0]?.pending === 0) return reply
            yield* Effect.sleep("50 millis")
          }
        })
        assert.strictEqual(listed.status, 200)
        assert.strictEqual(listed.body.webhooks.length, 1)
        assert.deepInclude(listed.body.webhooks[0], {
          webhook_id: hook.webhook_id,
          url: receiver.url("/signed"),
          state: "active",
          failing_since: null,
          pending: 0
        })
        assert.notProperty(listed.body.webhooks[0], "secret")
        const deliveries = yield* who.app.call(`/v1/webhooks/${hook.webhook_id}/deliveries`, {
          key: who.token,
          ip: who.ip
        })
        assert.strictEqual(deliveries.status, 200)
        assert.deepStrictEqual(
          deliveries.body.attempts.map((a: any) => [a.type, a.status, a.response_code, a.attempt]),
          [
            ["key.revoked", "succeeded", 200, 1],
            ["key.created", "succeeded", 200, 1]
          ]
        )

        // The secret is stored sealed: nowhere in the row in clear.
        const sql = yield* SqlClient.SqlClient
        const rows = yield* Effect.orDie(sql`SELECT * FROM webhook_endpoints WHERE id = ${hook.webhook_id}`)
        assert.notInclude(JSON.stringify(rows), hook.secret.slice(6))
        assert.match(String(rows[0]!.secret_sealed), /^v1:[0-9a-f]{8}:/)
      })
    )

    it.effect(
      "a failed attempt is retried with the same webhook-id and a fresh signature, until delivered",
      () =>
        Effect.gen(function* () {
          const who = yield* owner("hooks-retry@example.com")
          const hook = yield* createHook(who, "/retry", ["key.created"])
          behaviours.set("/retry", () =>
            at("/retry").length === 1
              ? { status: 500, body: `boom ${"x".repeat(5000)}` }
              : at("/retry").length === 2
                ? { drop: true }
                : { status: 204 }
          )
          yield* post(who.app, "/v1/keys", { label: "retry" }, { key: who.token, ip: who.ip })
          yield* until(() => at("/retry").length === 3, "three attempts")
          const [first, second, third] = at("/retry")
          assert.strictEqual(second!.id, first!.id)
          assert.strictEqual(third!.id, first!.id)
          assert.strictEqual(third!.body, first!.body, "the same bytes every time")
          for (const attempt of [first!, second!, third!])
            assert.strictEqual(verified(hook.secret, attempt).id, first!.id)
          // Backoff: the second attempt waited at least the first delay.
          assert.isAtLeast(second!.at - first!.at, 250)
          const deliveries = yield* Effect.gen(function* () {
            for (;;) {
              const reply = yield* who.app.call(`/v1/webhooks/${hook.webhook_id}/deliveries`, {
                key: who.token,
                ip: who.ip
              })
              if (reply.body.attempts.length === 3) return reply.body
              yield* Effect.sleep("50 millis")
            }
          })
          const [last, dropped, failed] = deliveries.attempts
          assert.deepInclude(failed, {
            status: "failed",
            response_code: 500,
            attempt: 1,
            error: "answered 500"
          })
          assert.isAtMost(
            failed.response_body.length,
            defaultPolicy.webhooks.responseMaxBytes,
            "the answer is capped"
          )
          assert.isTrue(failed.response_body.startsWith("boom xxx"))
          assert.deepInclude(dropped, { status: "failed", response_code: null, attempt: 2 })
          assert.deepInclude(last, { status: "succeeded", response_code: 204, attempt: 3 })
          assert.deepStrictEqual(deliveries.pending, [])
        })
    )

    it.effect(
      "a slow receiver costs its timeout and never holds up another endpoint; redirects are not followed",
      () =>
        Effect.gen(function* () {
          const who = yield* owner("hooks-slow@example.com")
          behaviours.set("/slow", () => ({ hang: true }))
          behaviours.set("/moved", () => ({ status: 302, headers: { location: receiver.url("/target") } }))
          yield* createHook(who, "/slow", ["key.created"])
          const fast = yield* createHook(who, "/fast", ["key.created"])
          const moved = yield* createHook(who, "/moved", ["key.created"])
          yield* post(who.app, "/v1/keys", { label: "slow" }, { key: who.token, ip: who.ip })
          yield* until(
            () => at("/fast").length === 1 && at("/slow").length === 1 && at("/moved").length === 1,
            "all three"
          )
          // The fast endpoint was answered while the slow one hung.
          assert.isBelow(at("/fast")[0]!.at - at("/slow")[0]!.at, policy.webhooks.timeoutMs)
          assert.strictEqual(verified(fast.secret, at("/fast")[0]!).type, "key.created")
          assert.strictEqual(at("/target").length, 0, "the redirect was not followed")
          const sql = yield* SqlClient.SqlClient
          const attempts = yield* Effect.gen(function* () {
            for (;;) {
              const rows =
                yield* Effect.orDie(sql`SELECT a.status, a.error, a.duration_ms, e.url FROM webhook_attempts a
              JOIN webhook_endpoints e ON e.id = a.endpoint_id WHERE e.account_id = ${who.accountId}`)
              if (rows.some((row) => String(row.url).endsWith("/slow"))) return rows
              yield* Effect.sleep("50 millis")
            }
          })
          const slow = attempts.find((row) => String(row.url).endsWith("/slow"))!
          assert.strictEqual(slow.status, "failed")
          assert.include(String(slow.error), `within ${policy.webhooks.timeoutMs} ms`)
          assert.isBelow(Number(slow.duration_ms), policy.webhooks.timeoutMs + 1000)
          const redirected = attempts.find((row) => String(row.url).endsWith("/moved"))!
          assert.deepInclude(redirected, { status: "failed", error: "answered 302" })
          assert.isString(moved.webhook_id)
          receiver.release(200)
        })
    )

    it.effect("an endpoint failing for 3 days is disabled, its owner emailed; a test enables it again", () =>
      Effect.gen(function* () {
        const who = yield* owner("hooks-dead@example.com")
        const sql = yield* SqlClient.SqlClient
        behaviours.set("/dead", () => ({ status: 503 }))
        const hook = yield* createHook(who, "/dead", ["key.created"])
        // Its failures began three days ago (the streak is kept across events).
        yield* Effect.orDie(
          sql`UPDATE webhook_endpoints SET failing_since = ${Date.now() - 3 * 86_400_000 + 1000} WHERE id = ${hook.webhook_id}`
        )
        yield* post(who.app, "/v1/keys", { label: "one" }, { key: who.token, ip: who.ip })
        yield* post(who.app, "/v1/keys", { label: "two" }, { key: who.token, ip: who.ip })
        yield* until(() => at("/dead").length >= 1, "an attempt")
        const state = Effect.gen(function* () {
          for (;;) {
            const rows = yield* Effect.orDie(
              sql`SELECT state FROM webhook_endpoints WHERE id = ${hook.webhook_id}`
            )
            if (rows[0]!.state === "disabled") return rows[0]!.state
            yield* Effect.sleep("50 millis")
          }
        })
        assert.strictEqual(yield* state, "disabled")
        const mails = (yield* mailTo("hooks-dead@example.com")).filter(
          (mail) => mail.kind === "webhook_disabled"
        )
        assert.strictEqual(mails.length, 1)
        assert.include(mails[0]!.text, hook.webhook_id)
        assert.include(mails[0]!.text, "503")
        const pending = yield* Effect.orDie(
          sql`SELECT state FROM webhook_deliveries WHERE endpoint_id = ${hook.webhook_id} ORDER BY created_at`
        )
        assert.notInclude(
          pending.map((row) => row.state),
          "pending",
          "nothing more is sent to a disabled endpoint"
        )
        const listed = yield* who.app.call("/v1/webhooks", { key: who.token, ip: who.ip })
        assert.strictEqual(listed.body.webhooks[0].state, "disabled")

        // Back up: a test ping enables it again and is delivered.
        behaviours.set("/dead", () => ({ status: 200 }))
        const tested = yield* post(
          who.app,
          "/v1/webhooks/test",
          { webhook_id: hook.webhook_id },
          { key: who.token, ip: who.ip }
        )
        assert.strictEqual(tested.status, 202, JSON.stringify(tested.body))
        yield* until(() => at("/dead").some((request) => request.id === tested.body.event_id), "the ping")
        const ping = verified(
          hook.secret,
          at("/dead").find((request) => request.id === tested.body.event_id)!
        )
        assert.deepStrictEqual([ping.type, ping.data], ["ping", { webhook_id: hook.webhook_id }])
        const again = yield* who.app.call("/v1/webhooks", { key: who.token, ip: who.ip })
        assert.strictEqual(again.body.webhooks[0].state, "active")
      })
    )

    it.effect(
      "the rules of the routes: events, the limit of 10, another account's webhook, deletion, a spend key",
      () =>
        Effect.gen(function* () {
          const who = yield* owner("hooks-rules@example.com")
          const other = yield* owner("hooks-other@example.com")
          const as = { key: who.token, ip: who.ip }
          const unknown = yield* post(
            who.app,
            "/v1/webhooks",
            { url: receiver.url("/r"), events: ["key.deleted"] },
            as
          )
          assert.deepInclude(unknown.body, { code: "INVALID_INPUT", param: "events" })
          assert.strictEqual(unknown.headers.get("content-type"), "application/problem+json")
          const none = yield* post(who.app, "/v1/webhooks", { url: receiver.url("/r"), events: [] }, as)
          assert.deepInclude(none.body, { code: "INVALID_INPUT", param: "events" })
          const ping = yield* post(who.app, "/v1/webhooks", { url: receiver.url("/r"), events: ["ping"] }, as)
          assert.deepInclude(ping.body, { code: "INVALID_INPUT", param: "events" })
          const missing = yield* post(who.app, "/v1/webhooks", { events: ["key.created"] }, as)
          assert.deepInclude(missing.body, { code: "INVALID_INPUT", param: "url" })
          const notUrl = yield* post(
            who.app,
            "/v1/webhooks",
            { url: "hooks please", events: ["key.created"] },
            as
          )
          assert.deepInclude(notUrl.body, { code: "INVALID_INPUT", param: "url" })
          const credentials = yield* post(
            who.app,
            "/v1/webhooks",
            { url: receiver.url("/r").replace("http://", "http://user:pw@"), events: ["key.created"] },
            as
          )
          assert.deepInclude(credentials.body, { code: "INVALID_INPUT", param: "url" })
          const spendKey = yield* post(
            who.app,
            "/v1/webhooks",
            { url: receiver.url("/r"), events: ["key.created"] },
            {
              key: who.key,
              ip: who.ip
            }
          )
          assert.strictEqual(spendKey.body.code, "AUTH_REQUIRED")

          const ids: Array<string> = []
          for (let n = 0; n < policy.webhooks.maxEndpointsPerAccount; n++)
            ids.push((yield* createHook(who, `/r${n}`, ["key.created"])).webhook_id)
          const eleventh = yield* post(
            who.app,
            "/v1/webhooks",
            { url: receiver.url("/r11"), events: ["key.created"] },
            as
          )
          assert.strictEqual(eleventh.status, 400)
          assert.strictEqual(eleventh.body.code, "INVALID_INPUT")
          assert.include(eleventh.body.detail, "10 webhooks")

          // Another account's webhook is NOT_FOUND, exactly as one that does not exist.
          for (const path of [`/v1/webhooks/${ids[0]}/deliveries`, "/v1/webhooks/wh_nope/deliveries"]) {
            const reply = yield* other.app.call(path, { key: other.token, ip: other.ip })
            assert.deepInclude(reply.body, { code: "NOT_FOUND", param: "webhook_id" })
          }
          const foreignDelete = yield* post(
            other.app,
            "/v1/webhooks/delete",
            { webhook_id: ids[0] },
            { key: other.token, ip: other.ip }
          )
          assert.deepInclude(foreignDelete.body, { code: "NOT_FOUND", param: "webhook_id" })

          // Each test makes the service send a request: a few per account and hour.
          for (let n = 0; n < 3; n++) {
            const tested = yield* post(who.app, "/v1/webhooks/test", { webhook_id: ids[1] }, as)
            assert.strictEqual(tested.status, 202, JSON.stringify(tested.body))
          }
          const fourth = yield* post(who.app, "/v1/webhooks/test", { webhook_id: ids[1] }, as)
          assert.strictEqual(fourth.status, 429)
          assert.strictEqual(fourth.body.code, "RATE_LIMITED")
          assert.isAbove(fourth.body.retry_after_seconds, 0)

          const deleted = yield* post(who.app, "/v1/webhooks/delete", { webhook_id: ids[0] }, as)
          assert.strictEqual(deleted.status, 200)
          assert.strictEqual(deleted.body.webhook_id, ids[0])
          const again = yield* post(who.app, "/v1/webhooks/delete", { webhook_id: ids[0] }, as)
          assert.strictEqual(again.body.code, "NOT_FOUND")
          const test = yield* post(who.app, "/v1/webhooks/test", { webhook_id: ids[0] }, as)
          assert.strictEqual(test.body.code, "NOT_FOUND")
          // A deleted endpoint frees its place.
          yield* createHook(who, "/r-last", ["key.created"])
          const listed = yield* who.app.call("/v1/webhooks", as)
          assert.strictEqual(listed.body.webhooks.length, policy.webhooks.maxEndpointsPerAccount)
          assert.notInclude(
            listed.body.webhooks.map((hook: any) => hook.webhook_id),
            ids[0]
          )
        })
    )
  })
})
