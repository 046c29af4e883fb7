import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { defaultPolicy } from "../../src/domain/policy.ts"

/** What the clients were answered, which the ledger must agree with. */
export interface Answer {
  readonly account: string
  readonly idem: string
  readonly receipt: string
  readonly charged: number
  readonly free: number
  readonly spent: number
  readonly replayed: boolean
}

/** What the simulator saw come into accounts: the reference model's inputs besides the answers. */
export interface Model {
  readonly answers: Array<Answer>
  /** How many of `answers` are already in the store's `sim_answers` table (see `ledgerChecks`). */
  answersStored: number
  /** The table statistics are refreshed when the answers reach this many (see `ledgerChecks`). */
  analyzeAt: number
  /** Credits each account was told it got (claim grants, paid checkouts), by account. */
  readonly credited: Map<string, number>
  /** Checkout sessions the simulator paid, by session id, with the account they pay. */
  readonly paid: Map<string, string>
}

/** An empty model: nothing answered, credited or paid yet. */
export const emptyModel = (): Model => ({
  answers: [],
  answersStored: 0,
  analyzeAt: 64,
  credited: new Map(),
  paid: new Map()
})

export interface Violation {
  readonly invariant: string
  readonly detail: string
}

/**
 * One statement for a list of checks: each check is a query whose rows are violations; the result
 * has one row per broken check with its offending rows (as JSON; the first three are shown). One
 * round trip to the store per list instead of one per check. (The rows are not limited in SQL: a
 * LIMIT turns the planner to nested loops that cost more on the quiet, usual case of no rows.)
 */
export const checkAll = (
  checks: ReadonlyArray<readonly [invariant: string, query: string]>,
  params: ReadonlyArray<unknown>
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const text = checks
      .map(([, query], i) => `SELECT ${i} AS n, (SELECT json_agg(bad)::text FROM (${query}) bad) AS detail`)
      .join("\nUNION ALL ")
    const rows = yield* sql.unsafe<{ n: number; detail: string | null }>(
      `SELECT * FROM (${text}) checked WHERE detail IS NOT NULL ORDER BY 1`,
      params
    )
    return rows.map(
      (row): Violation => ({
        invariant: checks[row.n]![0],
        detail: (JSON.parse(row.detail!) as Array<unknown>)
          .slice(0, 3)
          .map((bad) => {
            const only = bad !== null && typeof bad === "object" ? Object.values(bad) : []
            // A check that names its violation in words has one column, `problem`.
            return only.length === 1 && typeof only[0] === "string" ? only[0] : JSON.stringify(bad)
          })
          .join("; ")
      })
    )
  })

/**
 * The invariants that hold at every moment, even with calls in flight: checked after every step
 * and while the simulator holds calls in the upstream. `$1`: now, in ms.
 */
const always: ReadonlyArray<readonly [string, string]> = [
  [
    "no balance or grant below zero",
    "SELECT id, grant_credits, balance_credits FROM accounts WHERE grant_credits < 0 OR balance_credits < 0"
  ],
  [
    `the free budget of an IP and day never over ${defaultPolicy.freeCreditsPerIpDay}`,
    `SELECT ip, day, credits_used FROM free_tier_usage
     WHERE credits_used > ${defaultPolicy.freeCreditsPerIpDay} OR credits_used < 0`
  ],
  [
    "one call in flight per account",
    "SELECT account_id, count(*) AS n FROM calls WHERE state = 'reserved' GROUP BY account_id HAVING count(*) > 1"
  ],
  [
    "at most one charge per Idempotency-Key",
    `SELECT account_id, idempotency_key, count(*) AS n FROM calls WHERE state = 'settled' AND idempotency_key IS NOT NULL
     GROUP BY account_id, idempotency_key HAVING count(*) > 1`
  ],
  [
    "no key over its spend cap in any of its periods (UTC day, month, or in total)",
    // What a key spent in a period: its calls' and its children's, settled ones as charged and
    // reserved ones at their quote, each in the period of the UTC day it was reserved on. Worked out
    // here from the calls, not from the store's own counters (`key_spend`, `svc_period`).
    `SELECT cap.id, cap.cap_period, cap.spend_cap_credits,
            CASE cap.cap_period WHEN 'day' THEN c.day::text
              WHEN 'month' THEN to_char(date '1970-01-01' + c.day, 'YYYY-MM') ELSE 'total' END AS period,
            SUM(CASE WHEN c.state = 'reserved' THEN c.quoted ELSE c.charged END) AS spent
     FROM calls c JOIN api_keys k ON k.id = c.key_id
     JOIN api_keys cap ON cap.id IN (k.id, k.parent_key_id)
     WHERE cap.spend_cap_credits IS NOT NULL AND c.state IN ('reserved', 'settled')
     GROUP BY 1, 2, 3, 4
     HAVING SUM(CASE WHEN c.state = 'reserved' THEN c.quoted ELSE c.charged END) > cap.spend_cap_credits`
  ],
  [
    "each account's day of usage is the sum of its settled calls that day",
    `SELECT COALESCE(u.account_id, c.account_id) AS account_id, COALESCE(u.day, c.day) AS day,
            u.credits, u.calls, c.credits AS summed_credits, c.calls AS summed_calls
     FROM usage_days u
     FULL JOIN (SELECT account_id, day, SUM(charged) AS credits, COUNT(*) AS calls FROM calls
                WHERE state = 'settled' GROUP BY account_id, day) c
       ON c.account_id = u.account_id AND c.day = u.day
     WHERE u.credits IS DISTINCT FROM c.credits OR u.calls IS DISTINCT FROM c.calls`
  ],
  [
    "no reservation stranded past its lease once time moves on",
    "SELECT id, account_id, lease_expires_at FROM calls WHERE state = 'reserved' AND lease_expires_at < $1::bigint - 15000"
  ],
  [
    "no claim stranded past its lease once time moves on",
    `SELECT account_id, idem_key, lease_expires_at FROM idempotency_keys
     WHERE state = 'running' AND lease_expires_at < $1::bigint - 75000`
  ],
  [
    "never two top-ups open at once for an account",
    "SELECT account_id, count(*) AS n FROM topups WHERE state IN ('pending', 'charging') GROUP BY account_id HAVING count(*) > 1"
  ],
  [
    "no top-up past its monthly maximum",
    `SELECT account_id, month, SUM(price_usd_cents) AS spent, MAX(monthly_max_usd_cents) AS max FROM topups
     WHERE state <> 'failed' GROUP BY account_id, month HAVING SUM(price_usd_cents) > MAX(monthly_max_usd_cents)`
  ],
  [
    "every purchase applied once (one purchase per payment)",
    "SELECT payment_ref, count(*) AS n FROM purchases GROUP BY payment_ref HAVING count(*) > 1"
  ]
]

export const alwaysChecks = (now: number) => checkAll(always, [now]).pipe(Effect.orDie)

/**
 * The simulator's own tables in the store it runs on: the 200s the clients were answered
 * (appended as they come), so the ledger's checks compare the store against them in SQL instead of
 * reading whole tables out. The instances never touch them.
 */
export const prepareChecks = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(
    `CREATE TABLE sim_answers (
       seq integer PRIMARY KEY, account text NOT NULL, idem text NOT NULL, receipt text NOT NULL,
       charged bigint NOT NULL, free bigint NOT NULL, spent bigint NOT NULL)`
  )
  yield* sql.unsafe("CREATE INDEX sim_answers_receipt ON sim_answers (receipt, seq)")
}).pipe(Effect.orDie)

/**
 * The invariants of a quiet ledger (no call in flight), against what the clients were answered and
 * the reference model. `$1`: the credits each account was told it got (claim grants, paid
 * checkouts), `$2`: the checkout sessions paid, with their accounts (both JSON objects).
 */
const ledger: ReadonlyArray<readonly [string, string]> = [
  [
    "every settled call is a whole receipt (charged = its sources, never above the quote or the reservation)",
    `SELECT id, quoted, charged, charged_free, charged_grant, charged_balance FROM calls WHERE state = 'settled' AND (
       settled_at IS NULL OR charged > quoted OR charged < 0
       OR charged <> charged_free + charged_grant + charged_balance
       OR charged_free > reserved_free OR charged_grant > reserved_grant OR charged_balance > reserved_balance)`
  ],
  [
    "credits in - (grant + balance) = charges, per account",
    `SELECT a.id, COALESCE(e.credited, 0) AS credited, a.grant_credits + a.balance_credits AS left_over,
            COALESCE(c.charged, 0) AS charged, COALESCE(r.reserved, 0) AS reserved
     FROM accounts a
     LEFT JOIN (SELECT account_id, SUM(credits) AS credited FROM credit_events GROUP BY account_id) e ON e.account_id = a.id
     LEFT JOIN (SELECT account_id, SUM(charged_grant + charged_balance) AS charged FROM calls
                WHERE state = 'settled' GROUP BY account_id) c ON c.account_id = a.id
     LEFT JOIN (SELECT account_id, SUM(reserved_grant + reserved_balance) AS reserved FROM calls
                WHERE state = 'reserved' GROUP BY account_id) r ON r.account_id = a.id
     WHERE COALESCE(e.credited, 0) - (a.grant_credits + a.balance_credits) <> COALESCE(c.charged, 0) + COALESCE(r.reserved, 0)`
  ],
  [
    "free budget used = the free credits charged, per IP and day",
    `SELECT f.ip, f.day, f.credits_used, COALESCE(c.used, 0) AS charged FROM free_tier_usage f
     LEFT JOIN (SELECT ip, day, SUM(charged_free) AS used FROM calls WHERE state = 'settled' GROUP BY ip, day) c
       ON c.ip = f.ip AND c.day = f.day
     LEFT JOIN (SELECT ip, day, SUM(reserved_free) AS held FROM calls WHERE state = 'reserved' GROUP BY ip, day) r
       ON r.ip = f.ip AND r.day = f.day
     WHERE f.credits_used <> COALESCE(c.used, 0) + COALESCE(r.held, 0)`
  ],
  [
    "every stored result points at its settled call, and every settled call with a key has its stored result",
    `SELECT c.id, c.idempotency_key, i.state, i.call_id FROM calls c LEFT JOIN idempotency_keys i
       ON i.account_id = c.account_id AND i.idem_key = c.idempotency_key
     WHERE c.state = 'settled' AND c.idempotency_key IS NOT NULL AND i.call_id IS DISTINCT FROM c.id
     UNION ALL
     SELECT i.call_id, i.idem_key, i.state, c.state FROM idempotency_keys i LEFT JOIN calls c ON c.id = i.call_id
     WHERE i.state = 'done' AND (c.id IS NULL OR c.state <> 'settled')`
  ],
  [
    "each paid top-up credited by exactly one purchase, and no unpaid one credited",
    `SELECT t.id, t.state, t.payment_ref, (SELECT count(*) FROM purchases p WHERE p.payment_ref = t.payment_ref) AS n
     FROM topups t
     WHERE (t.state = 'succeeded' AND (t.payment_ref IS NULL OR (SELECT count(*) FROM purchases p WHERE p.payment_ref = t.payment_ref) <> 1))
        OR (t.state <> 'succeeded' AND t.payment_ref IS NOT NULL AND EXISTS (SELECT 1 FROM purchases p WHERE p.payment_ref = t.payment_ref))`
  ],
  // Against what the clients were answered.
  [
    "every 200 has its receipt, as charged, and one receipt per Idempotency-Key",
    `SELECT 'a 200 answered receipt ' || a.receipt || ', which is not a settled call' AS problem
     FROM sim_answers a LEFT JOIN calls c ON c.id = a.receipt AND c.state = 'settled' WHERE c.id IS NULL
     UNION ALL
     SELECT 'receipt ' || c.id || ' is of ' || c.account_id || ' ' || COALESCE(c.idempotency_key, 'null')
            || ', answered to ' || a.account || ' ' || a.idem
     FROM sim_answers a JOIN calls c ON c.id = a.receipt AND c.state = 'settled'
     WHERE c.account_id <> a.account OR c.idempotency_key IS DISTINCT FROM a.idem
     UNION ALL
     SELECT 'receipt ' || c.id || ' charged ' || c.charged || ', the answer said ' || a.charged
     FROM sim_answers a JOIN calls c ON c.id = a.receipt AND c.state = 'settled' WHERE c.charged <> a.charged
     UNION ALL
     SELECT account || ' ' || idem || ' answered with ' || string_agg(DISTINCT receipt, ' and then ')
     FROM sim_answers GROUP BY account, idem HAVING count(DISTINCT receipt) > 1`
  ],
  [
    "no charge without a 200 (every charged receipt was answered to a client)",
    `SELECT c.id || ' charged ' || c.charged AS problem FROM calls c
     WHERE c.state = 'settled' AND c.charged > 0 AND NOT EXISTS (SELECT 1 FROM sim_answers a WHERE a.receipt = c.id)`
  ],
  // The reference model: what each account has left and each IP's free budget used, computed from
  // the accepted operations (fresh 200s, each receipt counted once, when first answered: a replay
  // may be the first a client hears of it; the grants and payments the clients were told of; the
  // top-ups the store says it paid), less what a reservation still holds: a call whose refund was
  // cut off (its connection dropped) stays reserved until its lease runs out and a sweeper refunds
  // it, which "no reservation stranded past its lease" holds to.
  [
    "the balances equal the reference model's",
    `WITH once AS (SELECT DISTINCT ON (receipt) receipt, account, free, spent FROM sim_answers ORDER BY receipt, seq),
          credited AS (SELECT key AS account, value::bigint AS credits FROM json_each_text($1::json)),
          spent AS (SELECT account, SUM(spent) AS spent FROM once GROUP BY account),
          topped AS (SELECT account_id, SUM(credits) AS credits FROM topups WHERE state = 'succeeded' GROUP BY account_id),
          free AS (SELECT c.ip, SUM(o.free) AS used FROM once o JOIN calls c ON c.id = o.receipt
                   WHERE o.free > 0 AND c.state = 'settled' AND c.charged_free > 0 GROUP BY c.ip),
          held AS (SELECT account_id, SUM(reserved_grant + reserved_balance) AS credits FROM calls
                   WHERE state = 'reserved' GROUP BY account_id),
          held_free AS (SELECT ip, SUM(reserved_free) AS used FROM calls WHERE state = 'reserved' GROUP BY ip)
     SELECT a.id || ' has ' || (a.grant_credits + a.balance_credits) || ', the model says '
            || (COALESCE(cr.credits, 0) + COALESCE(t.credits, 0) - COALESCE(s.spent, 0) - COALESCE(h.credits, 0)) AS problem
     FROM accounts a
     LEFT JOIN credited cr ON cr.account = a.id
     LEFT JOIN topped t ON t.account_id = a.id
     LEFT JOIN spent s ON s.account = a.id
     LEFT JOIN held h ON h.account_id = a.id
     WHERE COALESCE(cr.credits, 0) + COALESCE(t.credits, 0) - COALESCE(s.spent, 0) - COALESCE(h.credits, 0)
           <> a.grant_credits + a.balance_credits
     UNION ALL
     SELECT 'free budget of ' || u.ip || ': used ' || u.used || ', the model says '
            || (COALESCE(f.used, 0) + COALESCE(hf.used, 0))
     FROM (SELECT ip, SUM(credits_used) AS used FROM free_tier_usage GROUP BY ip) u
     LEFT JOIN free f ON f.ip = u.ip
     LEFT JOIN held_free hf ON hf.ip = u.ip
     WHERE u.used <> COALESCE(f.used, 0) + COALESCE(hf.used, 0)`
  ],
  [
    "every paid checkout applied exactly once, to its account",
    `WITH bought AS (SELECT account_id, count(*) AS n FROM purchases WHERE payment_ref LIKE 'local:%' GROUP BY account_id),
          paid AS (SELECT value AS account, count(*) AS n FROM json_each_text($2::json) GROUP BY value)
     SELECT COALESCE(b.account_id, p.account) || ': ' || COALESCE(p.n, 0) || ' checkouts paid, '
            || COALESCE(b.n, 0) || ' purchases applied' AS problem
     FROM bought b FULL JOIN paid p ON p.account = b.account_id
     WHERE COALESCE(b.n, 0) <> COALESCE(p.n, 0)`
  ]
]

/** Appends the answers not yet in `sim_answers` (one statement). */
const storeAnswers = (model: Model) =>
  Effect.gen(function* () {
    if (model.answersStored === model.answers.length) return
    const sql = yield* SqlClient.SqlClient
    // `json_to_recordset` reads the columns it names and ignores the rest (`replayed`).
    const fresh = model.answers
      .slice(model.answersStored)
      .map((answer, i) => ({ ...answer, seq: model.answersStored + i }))
    yield* sql.unsafe(
      `INSERT INTO sim_answers (seq, account, idem, receipt, charged, free, spent)
       SELECT seq, account, idem, receipt, charged, free, spent FROM json_to_recordset($1::json)
         AS x(seq integer, account text, idem text, receipt text, charged bigint, free bigint, spent bigint)`,
      [JSON.stringify(fresh)]
    )
    model.answersStored = model.answers.length
  })

export const ledgerChecks = (model: Model) =>
  Effect.gen(function* () {
    yield* storeAnswers(model)
    // PGlite runs no autovacuum, so no table has statistics unless someone runs ANALYZE: the
    // checks' joins were planned for empty tables. Refreshed each time the answers double (a few
    // times a run, 80 ms each), the checks take a third less time.
    if (model.answersStored >= model.analyzeAt) {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe("ANALYZE")
      model.analyzeAt = model.answersStored * 2
    }
    return yield* checkAll(ledger, [
      JSON.stringify(Object.fromEntries(model.credited)),
      JSON.stringify(Object.fromEntries(model.paid))
    ])
  }).pipe(Effect.orDie)
