import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Admin } from "../../src/operator/Admin.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { advanceUntilDone, untilInFlight } from "../support/clock.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const freshIp = ipSequence("10.20")
const uuid = () => crypto.randomUUID()

/** A minted key moved to a paid plan with purchased credits. */
const paidAccount = (credits: number, plan: "flex" | "production" = "flex") =>
  paidKey(freshIp(), credits, plan)

describe(`metering (${storeName})`, () => {
  // Virtual time: a slow call (`delay_ms`) holds its slot until the test moves the TestClock.
  layer(testApp(testOperations), { timeout: 60_000 })((it) => {
    it.effect(
      "a trial call is charged from the free budget and answered with an envelope and a receipt",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const reply = yield* app.call("/v1/profnet/test-echo?value=hello", { key, ip })
          assert.strictEqual(reply.status, 200)
          const envelope = reply.body
          assert.strictEqual(envelope.schema_version, 2)
          assert.strictEqual(envelope.kind, "echo")
          assert.deepStrictEqual(envelope.data, { value: "hello" })
          assert.deepStrictEqual(envelope.cost, { quoted: 4, charged: 4, refunded: 0 })
          assert.strictEqual(envelope.freshness.requested, "recent")
          assert.deepStrictEqual(envelope.receipt.funding, { free_tier: 4, grant: 0, balance: 0 })
          assert.strictEqual(envelope.receipt.operation, "testEcho")
          assert.isFalse(envelope.receipt.replayed)
          assert.strictEqual(reply.headers.get("x-receipt-id"), envelope.receipt.id)
          assert.strictEqual(reply.headers.get("x-credits-charged"), "4")
          const usage = yield* app.call("/v1/usage", { key, ip })
          assert.strictEqual(usage.body.free_tier.used_today, 4)
          assert.deepStrictEqual(usage.body.today, { credits: 4, calls: 1 })
          const receipt = yield* app.call(`/v1/receipts/${envelope.receipt.id}`, { key, ip })
          assert.deepStrictEqual(receipt.body, envelope.receipt)
          const list = yield* app.call("/v1/receipts", { key, ip })
          assert.strictEqual(list.body.receipts[0].id, envelope.receipt.id)
        })
    )

    it.effect("max_credits below the quote is QUOTE_EXCEEDS_MAX_CREDITS and charges nothing", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const reply = yield* app.call("/v1/profnet/test-echo?value=x&cost=6&max_credits=5", { key, ip })
        assert.strictEqual(reply.status, 402)
        assert.strictEqual(reply.body.code, "QUOTE_EXCEEDS_MAX_CREDITS")
        const ok = yield* app.call("/v1/profnet/test-echo?value=x&cost=6&max_credits=6", { key, ip })
        assert.strictEqual(ok.status, 200)
        const usage = yield* app.call("/v1/usage", { key, ip })
        assert.strictEqual(usage.body.free_tier.used_today, 6)
        const negative = yield* app.call("/v1/profnet/test-echo?value=x&max_credits=-1", { key, ip })
        assert.strictEqual(negative.body.param, "max_credits")
        const badFreshness = yield* app.call("/v1/profnet/test-echo?value=x&freshness=soon", { key, ip })
        assert.strictEqual(badFreshness.body.param, "freshness")
      })
    )

    it.effect("trial caps: no realtime, search limit at most 10, first page only; each with an offer", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        for (const [query, param] of [
          ["freshness=realtime", "freshness"],
          ["limit=20", "limit"],
          ["cursor=abc", "cursor"]
        ] as const) {
          const reply = yield* app.call(`/v1/profnet/test-echo?value=x&${query}`, { key, ip })
          assert.strictEqual(reply.status, 403)
          assert.strictEqual(reply.body.code, "TRIAL_CAP_EXCEEDED")
          assert.strictEqual(reply.body.param, param)
          assert.strictEqual(reply.body.upgrade_url, "http://svc.test/upgrade")
          assert.include(reply.body.offer.checkout_url, account_id)
          assert.strictEqual(reply.body.offer.offer_version, 1)
          assert.strictEqual(reply.body.offer.reason, "TRIAL_CAP_EXCEEDED")
          assert.strictEqual(reply.body.offer.resume.action, "retry_fresh_idempotency_key")
          assert.deepStrictEqual(
            reply.body.offer.packs.map((p: { pack: string }) => p.pack),
            ["flex", "production"]
          )
        }
        const ten = yield* app.call("/v1/profnet/test-echo?value=x&limit=10", { key, ip })
        assert.strictEqual(ten.status, 200)
        assert.strictEqual(ten.body.cost.quoted, 10)
      })
    )

    it.effect("the free budget is 200 credits per IP and day, shared by every free key of the IP", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const first = yield* app.mint(ip)
        const second = yield* app.mint(ip)
        assert.strictEqual(
          (yield* app.call("/v1/profnet/test-echo?value=x&cost=150", { key: first.key, ip })).status,
          200
        )
        const over = yield* app.call("/v1/profnet/test-echo?value=x&cost=60", { key: second.key, ip })
        assert.strictEqual(over.status, 403)
        assert.strictEqual(over.body.code, "TRIAL_CAP_EXCEEDED")
        assert.strictEqual(over.body.offer.reason, "TRIAL_CAP_EXCEEDED")
        assert.strictEqual(
          (yield* app.call("/v1/profnet/test-echo?value=x&cost=50", { key: second.key, ip })).status,
          200
        )
        const usage = yield* app.call("/v1/usage", { key: second.key, ip })
        assert.strictEqual(usage.body.free_tier.remaining_today, 0)
        const elsewhere = yield* app.call("/v1/profnet/test-echo?value=x", { key: second.key, ip: freshIp() })
        assert.strictEqual(elsewhere.status, 200)
      })
    )

    it.effect("a grant is spent after the free budget, in one split charge", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        yield* Effect.orDie(admin.credit(account_id, 100, "grant", "claim grant"))
        assert.strictEqual(
          (yield* app.call("/v1/profnet/test-echo?value=x&cost=190", { key, ip })).status,
          200
        )
        const split = yield* app.call("/v1/profnet/test-echo?value=x&cost=30", { key, ip })
        assert.deepStrictEqual(split.body.receipt.funding, { free_tier: 10, grant: 20, balance: 0 })
        const usage = yield* app.call("/v1/usage", { key, ip })
        assert.deepStrictEqual(usage.body.balance, { grant: 80, purchased: 0, total: 80 })
        const short = yield* app.call("/v1/profnet/test-echo?value=x&cost=81", { key, ip })
        assert.strictEqual(short.body.code, "INSUFFICIENT_CREDITS")
        assert.strictEqual(short.body.credits_required, 81)
      })
    )

    it.effect(
      "paid keys must send an Idempotency-Key; a replay returns the stored result without a second charge",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const { key, ip } = yield* paidAccount(100)
          const missing = yield* app.call("/v1/profnet/test-echo?value=x", { key, ip })
          assert.strictEqual(missing.status, 400)
          assert.strictEqual(missing.body.code, "IDEMPOTENCY_KEY_REQUIRED")
          const short = yield* app.call("/v1/profnet/test-echo?value=x", { key, ip, idempotencyKey: "abc" })
          assert.strictEqual(short.body.param, "Idempotency-Key")
          const idem = uuid()
          const first = yield* app.call("/v1/profnet/test-echo?value=x", { key, ip, idempotencyKey: idem })
          assert.strictEqual(first.status, 200)
          assert.deepStrictEqual(first.body.receipt.funding, { free_tier: 0, grant: 0, balance: 4 })
          const again = yield* app.call("/v1/profnet/test-echo?value=x", { key, ip, idempotencyKey: idem })
          assert.strictEqual(again.status, 200)
          assert.strictEqual(again.headers.get("idempotent-replayed"), "true")
          assert.strictEqual(again.headers.get("x-credits-charged"), "0")
          assert.isTrue(again.body.receipt.replayed)
          assert.strictEqual(again.body.receipt.id, first.body.receipt.id)
          assert.deepStrictEqual(again.body.data, first.body.data)
          const reused = yield* app.call("/v1/profnet/test-echo?value=y", { key, ip, idempotencyKey: idem })
          assert.strictEqual(reused.status, 409)
          assert.strictEqual(reused.body.code, "IDEMPOTENCY_KEY_REUSED")
          const usage = yield* app.call("/v1/usage", { key, ip })
          assert.strictEqual(usage.body.balance.purchased, 96)
          assert.isUndefined(usage.body.free_tier)
        })
    )

    it.effect("INSUFFICIENT_CREDITS releases the key: after payment the SAME key succeeds", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const { key, ip, account_id } = yield* paidAccount(3)
        const idem = uuid()
        const short = yield* app.call("/v1/profnet/test-echo?value=x", { key, ip, idempotencyKey: idem })
        assert.strictEqual(short.status, 402)
        assert.strictEqual(short.body.code, "INSUFFICIENT_CREDITS")
        assert.strictEqual(short.body.credits_required, 4)
        assert.strictEqual(short.body.offer.resume.action, "retry_same_idempotency_key")
        yield* Effect.orDie(admin.credit(account_id, 10, "balance", "pack"))
        const paid = yield* app.call("/v1/profnet/test-echo?value=x", { key, ip, idempotencyKey: idem })
        assert.strictEqual(paid.status, 200)
        assert.strictEqual(paid.body.receipt.idempotency_key, idem)
      })
    )

    it.effect(
      "one call in flight per account; the same key while the original runs is CONCURRENCY_LIMIT",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const { key, ip, account_id } = yield* paidAccount(100)
          const idem = uuid()
          const slow = yield* Effect.forkChild(
            app.call("/v1/profnet/test-echo?value=x&delay_ms=800", { key, ip, idempotencyKey: idem })
          )
          yield* untilInFlight(account_id)
          const other = yield* app.call("/v1/forum/test-echo?value=y", { key, ip, idempotencyKey: uuid() })
          assert.strictEqual(other.status, 429)
          assert.strictEqual(other.body.code, "CONCURRENCY_LIMIT")
          assert.strictEqual(other.body.retry_after_seconds, 1)
          assert.isUndefined(other.body.offer)
          const same = yield* app.call("/v1/profnet/test-echo?value=x&delay_ms=800", {
            key,
            ip,
            idempotencyKey: idem
          })
          assert.strictEqual(same.body.code, "CONCURRENCY_LIMIT")
          const done = yield* advanceUntilDone(slow)
          assert.strictEqual(done.status, 200)
          const after = yield* app.call("/v1/forum/test-echo?value=y", { key, ip, idempotencyKey: uuid() })
          assert.strictEqual(after.status, 200)
          const usage = yield* app.call("/v1/usage", { key, ip })
          assert.strictEqual(usage.body.balance.purchased, 92)
        })
    )

    it.effect("trial accounts see an offer on CONCURRENCY_LIMIT; paid ones do not", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        const slow = yield* Effect.forkChild(
          app.call("/v1/profnet/test-echo?value=x&delay_ms=600", { key, ip })
        )
        yield* untilInFlight(account_id)
        const other = yield* app.call("/v1/profnet/test-echo?value=y", { key, ip })
        assert.strictEqual(other.body.code, "CONCURRENCY_LIMIT")
        assert.strictEqual(other.body.offer.resume.action, "wait_and_retry")
        assert.strictEqual((yield* advanceUntilDone(slow)).status, 200)
      })
    )

    it.effect("a failed upstream charges nothing, releases the key and the slot; refunds are receipted", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, ip } = yield* paidAccount(100)
        const idem = uuid()
        const failed = yield* app.call("/v1/profnet/test-echo?value=x&fail=upstream", {
          key,
          ip,
          idempotencyKey: idem
        })
        assert.strictEqual(failed.status, 502)
        assert.strictEqual(failed.body.code, "UPSTREAM_UNAVAILABLE")
        assert.strictEqual(failed.body.retry_after_seconds, 3)
        assert.isTrue(failed.body.is_retriable)
        const missing = yield* app.call("/v1/profnet/test-echo?value=x&fail=not_found", {
          key,
          ip,
          idempotencyKey: uuid()
        })
        assert.strictEqual(missing.status, 404)
        const invalid = yield* app.call("/v1/profnet/test-echo?value=bad", {
          key,
          ip,
          idempotencyKey: uuid()
        })
        assert.strictEqual(invalid.body.param, "value")
        const refunded = yield* app.call("/v1/profnet/test-echo?value=x&cost=10&refund=3", {
          key,
          ip,
          idempotencyKey: idem
        })
        assert.strictEqual(refunded.status, 200)
        assert.deepStrictEqual(refunded.body.cost, { quoted: 10, charged: 7, refunded: 3 })
        assert.deepStrictEqual(refunded.body.receipt.refunds, [{ reason: "fewer_results", credits: 3 }])
        const usage = yield* app.call("/v1/usage", { key, ip })
        assert.strictEqual(usage.body.balance.purchased, 93)
        assert.deepStrictEqual(usage.body.today, { credits: 7, calls: 1 })
      })
    )

    it.effect("rate limit per plan; a call rejected by a later check gives its token back", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ipA = freshIp()
        const { key } = yield* app.mint(ipA)
        const other = yield* app.mint(ipA)
        // Spend the IP's free budget with another key, so every call of `key` from ipA is rejected at reservation.
        assert.strictEqual(
          (yield* app.call("/v1/profnet/test-echo?value=x&cost=200", { key: other.key, ip: ipA })).status,
          200
        )
        for (let i = 0; i < 35; i++) {
          const rejected = yield* app.call("/v1/profnet/test-echo?value=x", { key, ip: ipA })
          assert.strictEqual(rejected.body.code, "TRIAL_CAP_EXCEEDED")
        }
        const ipB = freshIp()
        for (let i = 0; i < 30; i++) {
          assert.strictEqual(
            (yield* app.call("/v1/profnet/test-echo?value=x&cost=1", { key, ip: ipB })).status,
            200
          )
        }
        const limited = yield* app.call("/v1/profnet/test-echo?value=x&cost=1", { key, ip: ipB })
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.body.code, "RATE_LIMITED")
        assert.isAbove(limited.body.retry_after_seconds, 0)
        assert.strictEqual(limited.body.offer.reason, "RATE_LIMITED")
        const usage = yield* app.call("/v1/usage", { key, ip: ipB })
        assert.strictEqual(usage.status, 200, "get_usage is exempt from the rate limit")
      })
    )

    it.effect("NOT_ENTITLED for a platform the account lacks; suspended accounts are UNAUTHORIZED", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        yield* Effect.orDie(admin.entitle(account_id, ["forum"]))
        const denied = yield* app.call("/v1/profnet/test-echo?value=x", { key, ip })
        assert.strictEqual(denied.status, 403)
        assert.strictEqual(denied.body.code, "NOT_ENTITLED")
        const deniedBeforeValidation = yield* app.call("/v1/profnet/test-echo", { key, ip })
        assert.strictEqual(deniedBeforeValidation.body.code, "NOT_ENTITLED")
        assert.strictEqual((yield* app.call("/v1/forum/test-echo?value=x", { key, ip })).status, 200)
        yield* Effect.orDie(admin.setState(account_id, "suspended"))
        const suspended = yield* app.call("/v1/forum/test-echo?value=x", { key, ip })
        assert.strictEqual(suspended.body.code, "UNAUTHORIZED")
      })
    )

    it.effect("a closed free tier is BUDGET_EXHAUSTED for trial keys while grants still work", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const ip = freshIp()
        const trial = yield* app.mint(ip)
        const granted = yield* app.mint(freshIp())
        yield* Effect.orDie(admin.credit(granted.account_id, 50, "grant", "claim grant"))
        yield* Effect.orDie(admin.settings({ freeTierOpen: false }))
        const closed = yield* app.call("/v1/profnet/test-echo?value=x", { key: trial.key, ip })
        assert.strictEqual(closed.status, 503)
        assert.strictEqual(closed.body.code, "BUDGET_EXHAUSTED")
        assert.strictEqual(closed.body.offer.resume.action, "retry_fresh_idempotency_key")
        const funded = yield* app.call("/v1/profnet/test-echo?value=x", { key: granted.key, ip })
        assert.deepStrictEqual(funded.body.receipt.funding, { free_tier: 0, grant: 4, balance: 0 })
        yield* Effect.orDie(admin.settings({ freeTierOpen: true, globalDailyFreeCredits: 0 }))
        const ceiling = yield* app.call("/v1/profnet/test-echo?value=x", { key: trial.key, ip })
        assert.strictEqual(ceiling.body.code, "BUDGET_EXHAUSTED")
        yield* Effect.orDie(admin.settings({ globalDailyFreeCredits: undefined }))
        assert.strictEqual(
          (yield* app.call("/v1/profnet/test-echo?value=x", { key: trial.key, ip })).status,
          200
        )
      })
    )

    it.effect("receipts belong to their account only; paging by cursor covers each receipt once", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, ip } = yield* paidAccount(100)
        const ids: Array<string> = []
        for (let i = 0; i < 5; i++) {
          const reply = yield* app.call(`/v1/profnet/test-echo?value=${i}`, {
            key,
            ip,
            idempotencyKey: uuid()
          })
          ids.push(reply.body.receipt.id)
        }
        const seen: Array<string> = []
        let cursor: string | null = null
        do {
          const path: string = `/v1/receipts?limit=2${cursor === null ? "" : `&cursor=${cursor}`}`
          const page = yield* app.call(path, { key, ip })
          seen.push(...page.body.receipts.map((r: { id: string }) => r.id))
          cursor = page.body.cursor
        } while (cursor !== null)
        assert.deepStrictEqual([...seen].sort(), [...ids].sort())
        const stranger = yield* app.mint(freshIp())
        const foreign = yield* app.call(`/v1/receipts/${ids[0]}`, { key: stranger.key })
        assert.strictEqual(foreign.status, 404)
        const badCursor = yield* app.call("/v1/receipts?cursor=zzz", { key, ip })
        assert.strictEqual(badCursor.body.param, "cursor")
      })
    )

    it.effect("resolve operations take no freshness or max_credits", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const ok = yield* app.call("/v1/profnet/test-resolve?value=x", { key, ip })
        assert.strictEqual(ok.body.cost.quoted, 2)
        const missing = yield* app.call("/v1/profnet/test-resolve", { key, ip })
        assert.strictEqual(missing.body.code, "INVALID_INPUT")
        assert.strictEqual(missing.body.param, "value")
      })
    )
  })
})

describe(`response size limit (${storeName})`, () => {
  layer(testApp(testOperations, { maxResponseBytes: 200 }), { timeout: 60_000, excludeTestServices: true })(
    (it) => {
      it.effect("a response over the limit is PAYLOAD_TOO_LARGE and charges nothing", () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const big = yield* app.call(`/v1/profnet/test-echo?value=${"x".repeat(300)}`, { key, ip })
          assert.strictEqual(big.status, 413)
          assert.strictEqual(big.body.code, "PAYLOAD_TOO_LARGE")
          const usage = yield* app.call("/v1/usage", { key, ip })
          assert.strictEqual(usage.body.free_tier.used_today, 0)
          assert.strictEqual((yield* app.call("/v1/profnet/test-echo?value=small", { key, ip })).status, 200)
        })
      )
    }
  )
})

describe(`abandoned requests (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("a client that hangs up at any moment leaves no claim or reservation behind", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        const { key, ip, account_id } = yield* paidAccount(10_000)
        const abandoned = Array.from({ length: 60 }, (_, i) =>
          Effect.promise(async () => {
            const controller = new AbortController()
            setTimeout(() => controller.abort(), 1 + (i % 12))
            await fetch(`${app.url}/v1/profnet/test-echo?value=${i}&delay_ms=${(i % 3) * 15}`, {
              headers: {
                authorization: `Bearer ${key}`,
                "x-forwarded-for": ip,
                "idempotency-key": `abandoned-${i}-${uuid()}`
              },
              signal: controller.signal
            }).then(
              (r) => r.text(),
              () => "aborted"
            )
          })
        )
        yield* Effect.all(abandoned, { concurrency: 10 })
        // One statement reads the account and its calls together, so the books balance at any moment:
        // what was bought is what is left, plus what is held by calls still running, plus what was charged.
        const books = sql<{
          readonly left: number
          readonly held: number
          readonly charged: number
          readonly calls: number
          readonly running: number
        }>`SELECT a.balance_credits AS left,
            (SELECT COALESCE(SUM(reserved_balance), 0) FROM calls WHERE account_id = a.id AND state = 'reserved') AS held,
            (SELECT COALESCE(SUM(charged_balance), 0) FROM calls WHERE account_id = a.id AND state = 'settled') AS charged,
            (SELECT COUNT(*) FROM calls WHERE account_id = a.id) AS calls,
            (SELECT COUNT(*) FROM idempotency_keys WHERE account_id = a.id AND state = 'running') AS running
          FROM accounts a WHERE a.id = ${account_id}`.pipe(
          Effect.map(([row]) => ({
            left: Number(row!.left),
            held: Number(row!.held),
            charged: Number(row!.charged),
            calls: Number(row!.calls),
            running: Number(row!.running)
          }))
        )
        // Real time (live clock in this block): a request the server already read keeps running after
        // its client left until Node reports the closed socket, and a loaded machine may still be
        // working through them, so the books are read until nothing holds money or a key and two reads
        // 300 ms apart agree; at every read they must balance.
        let previous = yield* books
        let quiet = yield* books
        for (let reads = 0; reads < 100; reads++) {
          yield* Effect.sleep("300 millis")
          quiet = yield* books
          assert.strictEqual(quiet.left + quiet.held + quiet.charged, 10_000)
          if (quiet.held === 0 && quiet.running === 0 && quiet.calls === previous.calls) break
          previous = quiet
        }
        assert.strictEqual(quiet.held, 0)
        assert.strictEqual(quiet.running, 0)
        const usage = yield* app.call("/v1/usage", { key, ip })
        assert.strictEqual(usage.body.balance.purchased, 10_000 - quiet.charged)
        const after = yield* app.call("/v1/profnet/test-echo?value=after", {
          key,
          ip,
          idempotencyKey: uuid()
        })
        assert.strictEqual(after.status, 200)
      }).pipe(Effect.orDie)
    )
  })
})
