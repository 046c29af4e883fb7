import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { post } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { startReceiver } from "../support/webhookReceiver.ts"
import { ownerOn } from "./support.ts"

const policy = {
  ...defaultPolicy,
  webhooks: {
    ...defaultPolicy.webhooks,
    timeoutMs: 2_000,
    retryFirstMs: 5_000,
    retryMaxMs: 20_000,
    testsPerEndpoint: { limit: 2, windowMs: 60_000 }
  }
}

/** Account A's receivers never answer; B's answer at once. */
const receiver = await startReceiver((request) =>
  request.path.startsWith("/silent") ? { hang: true } : { status: 200 }
)
afterAll(() => receiver.close())

const until = (predicate: () => boolean, what: string, timeoutMs = 15_000) =>
  Effect.promise(async () => {
    const started = Date.now()
    while (!predicate()) {
      if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })

const silent = () => receiver.received.filter((request) => /^\/silent\d$/.test(request.path))

/**
 * Audit 2 (Medium): 4 endpoints that never answered in time and 6 key creations delayed another
 * account's test ping by a minute: 4 workers, each silent endpoint's queued deliveries tried one
 * after another, each costing a worker its timeout. Now an account holds at most
 * `perAccount` (2) workers, the account holding fewest is served first, and a failed endpoint
 * backs off as a whole.
 */
describe(`webhook deliveries waiting per endpoint are capped (${storeName})`, () => {
  const capped = {
    ...policy,
    webhooks: { ...policy.webhooks, maxPendingPerEndpoint: 3, retryFirstMs: 60_000, retryMaxMs: 60_000 }
  }
  layer(testApp(testOperations, { webhookAllowPrivateUrls: true, policy: capped }), {
    timeout: 60_000,
    excludeTestServices: true
  })((it) => {
    it.effect("past WEBHOOK_MAX_PENDING the newest events are not queued; the oldest are kept", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const who = yield* ownerOn(app, "fair-capped@example.com")
        const as = { key: who.token, ip: who.ip }
        const hook = yield* post(
          app,
          "/v1/webhooks",
          { url: receiver.url("/silent-capped"), events: ["key.created"] },
          as
        )
        for (let n = 0; n < 6; n++)
          assert.strictEqual((yield* post(app, "/v1/keys", { label: `c${n}` }, as)).status, 201)
        const listed = yield* app.call("/v1/webhooks", as)
        assert.strictEqual(listed.body.webhooks[0].pending, 3)
        // The three kept are the first three events (the newest were dropped).
        const log = yield* app.call(`/v1/webhooks/${hook.body.webhook_id}/deliveries`, as)
        assert.strictEqual(log.status, 200, JSON.stringify(log.body))
        const sql = yield* SqlClient.SqlClient
        const firstThree = yield* sql<{ id: string }>`SELECT id FROM webhook_events
          WHERE account_id = ${who.accountId} AND type = 'key.created' ORDER BY created_at, id LIMIT 3`.pipe(
          Effect.orDie
        )
        assert.deepStrictEqual(
          log.body.pending.map((row: { event_id: string }) => row.event_id).sort(),
          firstThree.map((row) => row.id).sort()
        )
      })
    )
  })
})

describe(`webhook fairness across accounts (${storeName})`, () => {
  layer(testApp(testOperations, { webhookAllowPrivateUrls: true, policy }), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect("one account's silent receivers do not delay another account's test ping", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const a = yield* ownerOn(app, "fair-a@example.com")
        const b = yield* ownerOn(app, "fair-b@example.com")
        const asA = { key: a.token, ip: a.ip }
        for (let n = 1; n <= 4; n++) {
          const made = yield* post(
            app,
            "/v1/webhooks",
            { url: receiver.url(`/silent${n}`), events: ["key.created"] },
            asA
          )
          assert.strictEqual(made.status, 201, JSON.stringify(made.body))
        }
        const hookB = yield* post(
          app,
          "/v1/webhooks",
          { url: receiver.url("/prompt"), events: ["key.revoked"] },
          { key: b.token, ip: b.ip }
        )
        assert.strictEqual(hookB.status, 201)
        // 6 key creations: 24 deliveries to receivers that never answer.
        for (let n = 0; n < 6; n++)
          assert.strictEqual((yield* post(app, "/v1/keys", { label: `k${n}` }, asA)).status, 201)
        yield* until(() => silent().length >= 1, "A's first attempt")
        const firstSilent = silent()[0]!.at

        const pinged = Date.now()
        const ping = yield* post(
          app,
          "/v1/webhooks/test",
          { webhook_id: hookB.body.webhook_id },
          { key: b.token, ip: b.ip }
        )
        assert.strictEqual(ping.status, 202, JSON.stringify(ping.body))
        yield* until(
          () => receiver.received.some((request) => request.path === "/prompt"),
          "B's ping",
          10_000
        )
        const delivered = receiver.received.find((request) => request.path === "/prompt")!.at
        // B's ping went out before any of A's attempts could even time out (before, it waited for
        // 24 of them: 6 rounds of 4 workers at 2 s each).
        assert.isBelow(delivered - pinged, policy.webhooks.timeoutMs, "B waited behind A")

        // A held at most 2 workers: no more than 2 of its endpoints were tried within one timeout.
        const firstRound = silent().filter(
          (request) => request.at < firstSilent + policy.webhooks.timeoutMs - 300
        )
        assert.isAtMost(new Set(firstRound.map((request) => request.path)).size, 2)
        // Each silent endpoint backs off as a whole: one attempt each, not one per queued delivery,
        // until its 5 s wait is over.
        yield* Effect.sleep("4500 millis")
        const byPath = new Map<string, number>()
        for (const request of silent()) byPath.set(request.path, (byPath.get(request.path) ?? 0) + 1)
        assert.deepStrictEqual([...byPath.values()].sort(), [1, 1, 1, 1], JSON.stringify([...byPath]))
      })
    )

    it.effect("test pings are limited per endpoint, within the account's limit", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const c = yield* ownerOn(app, "fair-c@example.com")
        const as = { key: c.token, ip: c.ip }
        const hook = yield* post(
          app,
          "/v1/webhooks",
          { url: receiver.url("/pinged"), events: ["key.created"] },
          as
        )
        const other = yield* post(
          app,
          "/v1/webhooks",
          { url: receiver.url("/pinged2"), events: ["key.created"] },
          as
        )
        for (let n = 0; n < 2; n++)
          assert.strictEqual(
            (yield* post(app, "/v1/webhooks/test", { webhook_id: hook.body.webhook_id }, as)).status,
            202
          )
        const refused = yield* post(app, "/v1/webhooks/test", { webhook_id: hook.body.webhook_id }, as)
        assert.strictEqual(refused.status, 429)
        assert.strictEqual(refused.body.code, "RATE_LIMITED")
        assert.isAbove(refused.body.retry_after_seconds, 0)
        // Another endpoint of the account still has its own.
        assert.strictEqual(
          (yield* post(app, "/v1/webhooks/test", { webhook_id: other.body.webhook_id }, as)).status,
          202
        )
      })
    )
  })
})
