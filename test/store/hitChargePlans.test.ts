import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { freshDatabase, storeName } from "../support/database.ts"

/**
 * A batch of cache hits (`svc_charge_hits`) locks its accounts first, in id order. Each lock must
 * find its account through the primary key: locked with one `= ANY (ARRAY(...))` statement, the
 * planner assumed ten ids and, with a few hundred accounts or a few thousand, scanned every account
 * instead, on every batch (migrations/0019_hit_locks.sql).
 *
 * Counted by the session's own statistics (`pg_stat_xact_user_tables`, before and after inside one
 * transaction) on a ledger of 400 analysed accounts, with the planner's default costs.
 */
const accounts = 400

const seqScansOfAccountsDuring = <A, E, R>(work: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        const count = Effect.map(
          sql<{ readonly seq_scan: number }>`
            SELECT seq_scan::int AS seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'accounts'`,
          (rows) => rows[0]?.seq_scan ?? 0
        )
        const before = yield* count
        const result = yield* work
        return { scans: (yield* count) - before, result }
      })
    )
  })

const hit = (n: number) => ({
  call_id: `rcpt_plan${n}`,
  account_id: `acct_plan${String(n).padStart(4, "0")}`,
  key_id: `key_plan${String(n).padStart(4, "0")}`,
  operation: "profnet.getProfile",
  ip: "192.0.2.1",
  day: 20_786,
  quoted: 1,
  charged: 1,
  refunds: "[]",
  idempotency_key: `plan-${n}`,
  fingerprint: "fp",
  response: "{}",
  now: 1_795_970_000_000,
  replay_until: 1_796_000_000_000,
  tombstone_until: 1_797_000_000_000,
  free_per_ip: 0,
  free_open: true,
  global_free: null
})

describe(`a batch of cache hits finds its accounts through the primary key (${storeName})`, () => {
  layer(freshDatabase, { timeout: 60_000 })((it) => {
    const ledger = Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO accounts (id, plan, state, balance_credits, created_at)
        SELECT 'acct_plan' || lpad(g::text, 4, '0'), 'production', 'active', 1000, 0
        FROM generate_series(0, ${accounts - 1}) g`
      yield* sql`INSERT INTO api_keys (id, account_id, secret_hash, hint, created_at)
        SELECT 'key_plan' || lpad(g::text, 4, '0'), 'acct_plan' || lpad(g::text, 4, '0'), 'hash_plan' || g, 'x', 0
        FROM generate_series(0, ${accounts - 1}) g`
      yield* sql`ANALYZE accounts`
    })

    it.effect("locks and charges a batch without scanning the accounts", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* ledger
        const batch = JSON.stringify([hit(7), hit(300), hit(42)])
        const { scans, result } = yield* seqScansOfAccountsDuring(
          sql<{ readonly call_id: string; readonly outcome: string }>`
            SELECT call_id, outcome FROM svc_charge_hits(${batch}::jsonb) ORDER BY call_id`
        )
        assert.deepStrictEqual(
          result.map((row) => [row.call_id, row.outcome]),
          [
            ["rcpt_plan300", "charged"],
            ["rcpt_plan42", "charged"],
            ["rcpt_plan7", "charged"]
          ]
        )
        assert.strictEqual(scans, 0)

        // The count is real: a statement with no index to use is seen scanning.
        const unindexed = yield* seqScansOfAccountsDuring(
          sql`SELECT count(*) FROM accounts WHERE created_ip = 'x'`
        )
        assert.isAbove(unindexed.scans, 0)
        // And the one-statement lock the batch used before scanned on PostgreSQL 15's planner (PGlite's
        // PostgreSQL 17 prices such a list of ids lower, and takes the index there).
        const before = yield* seqScansOfAccountsDuring(
          sql`SELECT 1 FROM accounts a
            WHERE a.id = ANY (ARRAY(SELECT x->>'account_id' FROM jsonb_array_elements(${batch}::jsonb) x))
            ORDER BY a.id FOR UPDATE`
        )
        const version = yield* sql<{
          readonly v: number
        }>`SELECT current_setting('server_version_num')::int AS v`
        if ((version[0]?.v ?? 0) < 170000) assert.isAbove(before.scans, 0)
      })
    )
  })
})
