import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { operations } from "../../src/operations/registry.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { makeWorld } from "../../src/upstream/world/index.ts"
import { ipSequence } from "../support/accounts.ts"
import { appInstance, TestApp, testApp, testSeed } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { scrapeMetrics, seriesValue } from "../support/metrics.ts"
import { paidCaller, profilePath, profileSlugs, slugCycle, warmedProfile } from "../support/profiles.ts"

const world = makeWorld(testSeed)
const slugs = profileSlugs("engineer")
const nextSlug = slugCycle(slugs)
const freshIp = ipSequence("10.77")
const profile = profilePath
const paid = paidCaller(freshIp)
const warmed = warmedProfile(nextSlug, paid)

const count = (rows: ReadonlyArray<Record<string, unknown>>) => Number(rows[0]?.n ?? 0)

describe(`cache hits charged in one statement (${storeName})`, () => {
  layer(testApp(operations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect(
      "a hit: charged once with its receipt and stored result; replays and reuse as on the full path",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const slug = yield* warmed
          const account = yield* paid(1000)
          const key = crypto.randomUUID()
          const hit = yield* account.call(profile(slug), key)
          assert.strictEqual(hit.status, 200)
          assert.strictEqual(hit.body.freshness.served, "recent")
          const charged = hit.body.receipt.charged as number
          assert.isAbove(charged, 0)
          assert.deepStrictEqual(hit.body.receipt.funding, { free_tier: 0, grant: 0, balance: charged })
          assert.strictEqual(hit.headers.get("x-credits-charged"), String(charged))
          assert.strictEqual(yield* account.purchased, 1000 - charged)

          const row = yield* Effect.orDie(
            sql`SELECT state, charged, charged_balance, idempotency_key FROM calls WHERE id = ${hit.body.receipt.id}`
          )
          assert.deepInclude(row[0], { state: "settled", idempotency_key: key })
          assert.strictEqual(Number(row[0]!.charged), charged)
          const stored = yield* Effect.orDie(
            sql`SELECT state, response FROM idempotency_keys WHERE account_id = ${account.account_id} AND idem_key = ${key}`
          )
          assert.strictEqual(stored[0]!.state, "done")
          // The stored result is the envelope without its cost and receipt, which the call's row makes.
          const { cost: _cost, receipt: _receipt, ...result } = hit.body
          assert.deepStrictEqual(JSON.parse(stored[0]!.response as string), result)

          const replay = yield* account.call(profile(slug), key)
          assert.strictEqual(replay.headers.get("idempotent-replayed"), "true")
          assert.deepStrictEqual(replay.body, {
            ...hit.body,
            receipt: { ...hit.body.receipt, replayed: true }
          })
          assert.strictEqual(yield* account.purchased, 1000 - charged)
          // The same text from this instance's memory and from the ledger (another instance, whose
          // memory has not seen the key), the first time and from its memory after.
          const replayText = hit.text.replace('"replayed":false', '"replayed":true')
          assert.notStrictEqual(replayText, hit.text)
          assert.strictEqual(replay.text, replayText)
          assert.strictEqual((yield* account.call(profile(slug), key)).text, replayText)
          const other = (yield* appInstance(operations)).client
          for (let i = 0; i < 2; i++) {
            const fromLedger = yield* other.call(profile(slug), {
              key: account.key,
              ip: account.ip,
              idempotencyKey: key
            })
            assert.strictEqual(fromLedger.headers.get("idempotent-replayed"), "true")
            assert.strictEqual(fromLedger.text, replayText)
          }
          assert.strictEqual(yield* account.purchased, 1000 - charged)

          const reused = yield* account.call(profile(nextSlug()), key)
          assert.strictEqual(reused.body.code, "IDEMPOTENCY_KEY_REUSED")
          const receipt = yield* (yield* TestApp).call(`/v1/receipts/${hit.body.receipt.id}`, {
            key: account.key,
            ip: account.ip
          })
          // The same receipt, signed there (the answer's only when asked).
          const { signature, ...unsigned } = receipt.body
          assert.isString(signature)
          assert.deepStrictEqual(unsigned, hit.body.receipt)
        })
    )

    it.effect(
      "a declined hit takes the full path: not enough credits, a call in flight, an alert to cross",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const admin = yield* Admin
          const slug = yield* warmed

          const poor = yield* paid(1)
          const key = crypto.randomUUID()
          const short = yield* poor.call(profile(slug), key)
          assert.strictEqual(short.body.code, "INSUFFICIENT_CREDITS")
          assert.strictEqual(short.body.credits_available, 1)
          yield* Effect.orDie(admin.credit(poor.account_id, 100, "balance", "test purchase"))
          const paidNow = yield* poor.call(profile(slug), key)
          assert.strictEqual(paidNow.status, 200)
          assert.strictEqual(yield* poor.purchased, 101 - paidNow.body.receipt.charged)

          const busy = yield* paid(100)
          yield* Effect.orDie(sql`INSERT INTO calls (id, account_id, key_id, operation, state, ip, day, quoted,
            reserved_free, reserved_grant, reserved_balance, lease_expires_at, created_at)
          VALUES ('rcpt_heldbytest', ${busy.account_id}, 'key_x', 'getProfile', 'reserved', '10.77.9.9', 0, 0,
            0, 0, 0, ${Date.now() + 60_000}, ${Date.now()})`)
          const refused = yield* busy.call(profile(slug))
          assert.strictEqual(refused.body.code, "CONCURRENCY_LIMIT")
          yield* Effect.orDie(sql`DELETE FROM calls WHERE id = 'rcpt_heldbytest'`)
          assert.strictEqual((yield* busy.call(profile(slug))).status, 200)

          const watched = yield* paid(100)
          yield* Effect.orDie(
            sql`UPDATE accounts SET alert_threshold = 99, alert_armed = true WHERE id = ${watched.account_id}`
          )
          assert.strictEqual((yield* watched.call(profile(slug))).status, 200)
          const alert = yield* Effect.orDie(
            sql`SELECT alert_armed FROM accounts WHERE id = ${watched.account_id}`
          )
          assert.isFalse(alert[0]!.alert_armed as boolean)
        })
    )

    it.effect(
      "usage counts each settled call once, a hit or the full path, and no call that charged nothing",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const slug = yield* warmed
          const account = yield* paid(1000)
          const live = yield* account.call(profile(nextSlug()))
          assert.strictEqual(live.body.freshness.served, "realtime")
          const hit = yield* account.call(profile(slug))
          assert.strictEqual(hit.body.freshness.served, "recent")
          const missing = yield* account.call(profile("nobody-by-this-name-0000"))
          assert.strictEqual(missing.body.code, "NOT_FOUND")
          const replayKey = crypto.randomUUID()
          const first = yield* account.call(profile(slug), replayKey)
          assert.strictEqual(
            (yield* account.call(profile(slug), replayKey)).headers.get("idempotent-replayed"),
            "true"
          )

          const charged = [live, hit, first].reduce(
            (sum, reply) => sum + (reply.body.receipt.charged as number),
            0
          )
          const usage = yield* (yield* TestApp).call("/v1/usage", { key: account.key, ip: account.ip })
          assert.deepStrictEqual(usage.body.history, [
            { day: (hit.body.receipt.created_at as string).slice(0, 10), credits: charged, calls: 3 }
          ])
          const ledger = yield* Effect.orDie(sql`SELECT
            (SELECT COALESCE(SUM(charged), 0) FROM calls WHERE account_id = ${account.account_id} AND state = 'settled') AS summed,
            (SELECT credits FROM usage_days WHERE account_id = ${account.account_id}) AS counted`)
          assert.strictEqual(Number(ledger[0]!.summed), charged)
          assert.strictEqual(Number(ledger[0]!.counted), charged)
        })
    )

    it.effect("a hit counts toward its key's spend cap, and one over the cap is refused as KEY_CAP", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const slug = yield* warmed
        const account = yield* paid(1000)
        const keys = yield* Effect.orDie(
          sql<{ readonly id: string }>`SELECT id FROM api_keys WHERE account_id = ${account.account_id}`
        )
        const keyId = keys[0]!.id
        const spent = Effect.map(
          Effect.orDie(sql<{ readonly spent: unknown }>`SELECT spent FROM key_spend WHERE key_id = ${keyId}`),
          (rows) => Number(rows[0]?.spent ?? 0)
        )
        const first = yield* account.call(profile(slug))
        assert.strictEqual(first.body.freshness.served, "recent")
        const price = first.body.receipt.charged as number
        assert.strictEqual(yield* spent, 0, "an uncapped key's hits are counted toward no cap")

        yield* Effect.orDie(
          sql`UPDATE api_keys SET spend_cap_credits = ${2 * price + 1}, cap_period = 'total' WHERE id = ${keyId}`
        )
        for (const n of [1, 2]) {
          const hit = yield* account.call(profile(slug))
          assert.strictEqual(hit.status, 200, JSON.stringify(hit.body))
          assert.strictEqual(hit.body.freshness.served, "recent")
          assert.strictEqual(yield* spent, n * price)
        }
        const over = yield* account.call(profile(slug))
        assert.strictEqual(over.body.code, "INSUFFICIENT_CREDITS", JSON.stringify(over.body))
        assert.strictEqual(over.body.limit, "key_cap")
        assert.strictEqual(over.body.credits_available, 1)
        assert.strictEqual(yield* spent, 2 * price)
        assert.strictEqual(yield* account.purchased, 1000 - 3 * price)
      })
    )

    it.effect("a domain a declined hit resolved is not remembered; a charged one is", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const admin = yield* Admin
        const person = slugs
          .map((slug) => world.getPerson({ slug })!)
          .find((p) => p.current_position?.company_slug)!
        const company = world.getCompany({ slug: person.current_position!.company_slug! })!
        const path = `/v1/profnet/companies?identifier=${company.domain}`
        const first = yield* (yield* paid(100)).call(path)
        assert.deepStrictEqual(first.body.cost, { quoted: 8, charged: 8, refunded: 0 })
        // The copy fetched by domain stays; the resolution is forgotten.
        yield* Effect.orDie(sql`DELETE FROM resolved_domains WHERE domain = ${company.domain}`)

        const poor = yield* paid(1)
        const key = crypto.randomUUID()
        assert.strictEqual((yield* poor.call(path, key)).body.code, "INSUFFICIENT_CREDITS")
        const known = yield* Effect.orDie(
          sql`SELECT count(*) AS n FROM resolved_domains WHERE domain = ${company.domain}`
        )
        assert.strictEqual(count(known), 0)
        yield* Effect.orDie(admin.credit(poor.account_id, 100, "balance", "test purchase"))
        const charged = yield* poor.call(path, key)
        assert.deepStrictEqual(charged.body.cost, { quoted: 8, charged: 8, refunded: 0 })
        assert.strictEqual(charged.body.freshness.served, "recent")
        const again = yield* poor.call(path)
        assert.deepStrictEqual(again.body.cost, { quoted: 8, charged: 4, refunded: 4 })
      })
    )

    it.effect("concurrent hits of many accounts share commits: each key charged once, money conserved", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const slug = yield* warmed
        const accounts = yield* Effect.forEach(Array.from({ length: 12 }), () => paid(1000))
        const results = yield* Effect.forEach(
          accounts,
          (account) =>
            Effect.gen(function* () {
              const keys = Array.from({ length: 4 }, () => crypto.randomUUID())
              const answers = []
              for (const key of keys) {
                // Each key twice at once: one charge, the other a replay or CONCURRENCY_LIMIT.
                const pair = yield* Effect.all(
                  [account.call(profile(slug), key), account.call(profile(slug), key)],
                  {
                    concurrency: 2
                  }
                )
                answers.push(...pair)
                const again = yield* account.call(profile(slug), key)
                assert.strictEqual(again.status, 200)
                answers.push(again)
              }
              return { account, answers }
            }),
          { concurrency: "unbounded" }
        )
        for (const { account, answers } of results) {
          for (const answer of answers) assert.include([200, 429], answer.status)
          const receipts = new Map<string, number>()
          for (const answer of answers) {
            if (answer.status === 200) receipts.set(answer.body.receipt.id, answer.body.receipt.charged)
          }
          assert.strictEqual(receipts.size, 4)
          const spent = [...receipts.values()].reduce((a, b) => a + b, 0)
          assert.strictEqual(yield* account.purchased, 1000 - spent)
          const settled = yield* Effect.orDie(
            sql`SELECT count(*) AS n, COALESCE(SUM(charged), 0) AS spent FROM calls
              WHERE account_id = ${account.account_id} AND state = 'settled'`
          )
          assert.strictEqual(count(settled), 4)
          assert.strictEqual(Number(settled[0]!.spent), spent)
          // Batches insert several receipts in one statement; each still counts into its day.
          const counted = yield* Effect.orDie(
            sql`SELECT COALESCE(SUM(calls), 0) AS n, COALESCE(SUM(credits), 0) AS spent FROM usage_days
              WHERE account_id = ${account.account_id}`
          )
          assert.strictEqual(count(counted), 4)
          assert.strictEqual(Number(counted[0]!.spent), spent)
        }
      })
    )

    it.effect(
      "a hit's group commit is timed on /metrics: its wait in the queue, the statement, the batch",
      () =>
        Effect.gen(function* () {
          const slug = yield* warmed
          const account = yield* paid(1000)
          const before = yield* scrapeMetrics
          const hit = yield* account.call(profile(slug))
          assert.strictEqual(hit.body.freshness.served, "recent")
          const after = yield* scrapeMetrics
          const delta = (series: string) => seriesValue(after, series) - seriesValue(before, series)
          // One hit: one wait, one statement, one batch (of one).
          for (const series of [
            "svc_hit_charge_wait_seconds_count",
            "svc_hit_charge_statement_seconds_count",
            "svc_hit_charge_batch_size_count",
            "svc_hit_charge_batch_size_sum"
          ])
            assert.strictEqual(delta(series), 1, series)
          const statement = delta("svc_hit_charge_statement_seconds_sum")
          assert.isAbove(statement, 0)
          assert.isBelow(statement, 60)
          assert.isAtLeast(delta("svc_hit_charge_wait_seconds_sum"), 0)
          // Each statement counted falls in a bucket: the histogram's buckets end at +Inf with all of them.
          assert.strictEqual(
            delta('svc_hit_charge_statement_seconds_bucket{le="+Inf"}'),
            delta("svc_hit_charge_statement_seconds_count")
          )
        })
    )

    it.effect(
      "a batch locks its accounts by key: its cost does not grow with every account in the store",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const stamp = crypto.randomUUID().slice(0, 8)
          // Accounts the store has never analyzed (a plan chosen without statistics scanned them all),
          // suspended: the batch locks each of its own and declines it, and writes nothing.
          yield* Effect.orDie(
            sql.unsafe(
              `INSERT INTO accounts (id, plan, state, created_ip, created_at)
              SELECT 'acct_scan_${stamp}_' || g, 'trial', 'suspended', '10.0.0.1', 0 FROM generate_series(1, 3000) g`
            )
          )
          const batch = [7, 1500, 2999].map((n) => ({
            call_id: `rcpt_scan_${stamp}_${n}`,
            account_id: `acct_scan_${stamp}_${n}`,
            key_id: `key_none_${n}`
          }))
          const read = yield* Effect.orDie(
            sql.withTransaction(
              Effect.gen(function* () {
                // pg_stat_xact_user_tables counts this transaction's own reads: the difference is this call's.
                const before =
                  yield* sql`SELECT seq_tup_read AS n FROM pg_stat_xact_user_tables WHERE relname = 'accounts'`
                const outcomes =
                  yield* sql`SELECT call_id, outcome FROM svc_charge_hits(${JSON.stringify(batch)}::jsonb)`
                const after =
                  yield* sql`SELECT seq_tup_read AS n FROM pg_stat_xact_user_tables WHERE relname = 'accounts'`
                return { outcomes, rows: count(after) - count(before) }
              })
            )
          )
          assert.deepStrictEqual(
            read.outcomes.map((row) => row.outcome),
            ["account", "account", "account"]
          )
          assert.isBelow(read.rows, 100)
        })
    )
  })
})
