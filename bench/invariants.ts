import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { defaultPolicy } from "../src/domain/policy.ts"
import { pool } from "./accounts.ts"
import type { PgSession } from "./pg.ts"
import { call } from "./service.ts"

/**
 * The ledger's invariants, one set for every caller: the simulation (test/sim) after its steps, the
 * storm and the rolling restart (bench/storm/checks.ts) and the soak once their load is over. Each
 * is a name and a query whose rows are its violations; a check that names its violation in words
 * has one column, `problem`. The lists differ by when they hold:
 *
 * - `always`: at every moment, even with calls in flight. `$1` is now, in ms (the leases).
 * - `quiet`: once no call is in flight, except those a dropped connection stranded (each still
 *   holds its reservation, counted as held, until its lease runs out and a sweeper refunds it).
 * - `drained`: once the leases have lapsed and the sweepers ran: nothing left in flight at all.
 *
 * No list takes parameters other than `always`'s `$1`; a caller that adds its own checks to a list
 * (the simulation's reference model) numbers its parameters after the list's.
 */
export interface Invariant {
  readonly name: string
  readonly query: string
}

/** A broken invariant: its name, its first offending rows (as read) and those rows in words. */
export interface Violation {
  readonly invariant: string
  readonly rows: ReadonlyArray<unknown>
  /** The first three offending rows, in words, `; ` between them. */
  readonly detail: string
}

/** The period of a key's cap a call counts in, as `key_spend.period` names it, worked out here (not by `svc_period`). */
const capPeriod = `CASE cap.cap_period WHEN 'day' THEN 'day:' || c.day
  WHEN 'month' THEN 'month:' || to_char(date '1970-01-01' + c.day, 'YYYY-MM') ELSE 'total' END`

/** What each capped key and its children spent per period of its cap: settled calls as charged, reserved ones at their quote. */
const capSpend = `SELECT cap.id AS key_id, cap.spend_cap_credits AS cap, ${capPeriod} AS period,
         SUM(CASE WHEN c.state = 'reserved' THEN c.quoted ELSE c.charged END) AS spent
  FROM calls c JOIN api_keys k ON k.id = c.key_id
  JOIN api_keys cap ON cap.id IN (k.id, k.parent_key_id)
  WHERE cap.spend_cap_credits IS NOT NULL AND c.state IN ('reserved', 'settled')
  GROUP BY 1, 2, 3`

export const always: ReadonlyArray<Invariant> = [
  {
    name: "no balance or grant below zero",
    query:
      "SELECT id, grant_credits, balance_credits FROM accounts WHERE grant_credits < 0 OR balance_credits < 0"
  },
  {
    name: `the free budget of an IP and day never over ${defaultPolicy.freeCreditsPerIpDay}`,
    query: `SELECT ip, day, credits_used FROM free_tier_usage
     WHERE credits_used > ${defaultPolicy.freeCreditsPerIpDay} OR credits_used < 0`
  },
  {
    name: "one call in flight per account",
    query:
      "SELECT account_id, count(*) AS n FROM calls WHERE state = 'reserved' GROUP BY account_id HAVING count(*) > 1"
  },
  {
    name: "at most one charge per Idempotency-Key",
    query: `SELECT account_id, idempotency_key, count(*) AS n FROM calls WHERE state = 'settled' AND idempotency_key IS NOT NULL
     GROUP BY account_id, idempotency_key HAVING count(*) > 1`
  },
  {
    // Worked out from the calls, each in the period of the UTC day it was reserved on, not from
    // the store's own counters (`key_spend`, `svc_period`), which a bug could break along with the cap.
    name: "no key over its spend cap in any of its periods (UTC day, month, or in total; its children's spend included)",
    query: `SELECT key_id || ' ' || period || ': spent ' || spent || ' of a cap of ' || cap AS problem
     FROM (${capSpend}) s WHERE spent > cap`
  },
  {
    name: "each account's day of usage is the sum of its settled calls that day",
    query: `SELECT COALESCE(u.account_id, c.account_id) AS account_id, COALESCE(u.day, c.day) AS day,
            u.credits, u.calls, c.credits AS summed_credits, c.calls AS summed_calls
     FROM usage_days u
     FULL JOIN (SELECT account_id, day, SUM(charged) AS credits, COUNT(*) AS calls FROM calls
                WHERE state = 'settled' GROUP BY account_id, day) c
       ON c.account_id = u.account_id AND c.day = u.day
     WHERE u.credits IS DISTINCT FROM c.credits OR u.calls IS DISTINCT FROM c.calls`
  },
  {
    name: "no reservation stranded past its lease once time moves on",
    query:
      "SELECT id, account_id, lease_expires_at FROM calls WHERE state = 'reserved' AND lease_expires_at < $1::bigint - 15000"
  },
  {
    name: "no claim stranded past its lease once time moves on",
    query: `SELECT account_id, idem_key, lease_expires_at FROM idempotency_keys
     WHERE state = 'running' AND lease_expires_at < $1::bigint - 75000`
  },
  {
    name: "never two top-ups open at once for an account",
    query:
      "SELECT account_id, count(*) AS n FROM topups WHERE state IN ('pending', 'charging') GROUP BY account_id HAVING count(*) > 1"
  },
  {
    // Each top-up not failed, counted when armed with the month's earlier ones (open and paid).
    name: "no top-up past its monthly maximum",
    query: `SELECT id || ' of ' || account_id || ' in ' || month || ': ' || spent_before || ' cents with it, maximum ' || max AS problem
     FROM (SELECT id, account_id, month, monthly_max_usd_cents AS max,
                  SUM(price_usd_cents) OVER (PARTITION BY account_id, month ORDER BY created_at, id) AS spent_before
           FROM topups WHERE state <> 'failed') t
     WHERE spent_before > max`
  },
  {
    name: "every purchase applied once (one purchase per payment)",
    query: "SELECT payment_ref, count(*) AS n FROM purchases GROUP BY payment_ref HAVING count(*) > 1"
  }
]

export const quiet: ReadonlyArray<Invariant> = [
  {
    name: "every settled call is a whole receipt (charged = its sources, never above the quote or the reservation)",
    query: `SELECT id, quoted, charged, charged_free, charged_grant, charged_balance FROM calls WHERE state = 'settled' AND (
       settled_at IS NULL OR charged > quoted OR charged < 0
       OR charged <> charged_free + charged_grant + charged_balance
       OR charged_free > reserved_free OR charged_grant > reserved_grant OR charged_balance > reserved_balance)`
  },
  {
    name: "credits in - (grant + balance) = charges, per account",
    query: `SELECT a.id, COALESCE(e.credited, 0) AS credited, a.grant_credits + a.balance_credits AS left_over,
            COALESCE(c.charged, 0) AS charged, COALESCE(r.reserved, 0) AS reserved
     FROM accounts a
     LEFT JOIN (SELECT account_id, SUM(credits) AS credited FROM credit_events GROUP BY account_id) e ON e.account_id = a.id
     LEFT JOIN (SELECT account_id, SUM(charged_grant + charged_balance) AS charged FROM calls
                WHERE state = 'settled' GROUP BY account_id) c ON c.account_id = a.id
     LEFT JOIN (SELECT account_id, SUM(reserved_grant + reserved_balance) AS reserved FROM calls
                WHERE state = 'reserved' GROUP BY account_id) r ON r.account_id = a.id
     WHERE COALESCE(e.credited, 0) - (a.grant_credits + a.balance_credits) <> COALESCE(c.charged, 0) + COALESCE(r.reserved, 0)`
  },
  {
    name: "free budget used = the free credits charged, per IP and day",
    query: `SELECT f.ip || ' day ' || f.day || ': used ' || f.credits_used || ', charged ' || COALESCE(c.used, 0)
            || ', held ' || COALESCE(r.held, 0) AS problem
     FROM free_tier_usage f
     LEFT JOIN (SELECT ip, day, SUM(charged_free) AS used FROM calls WHERE state = 'settled' GROUP BY ip, day) c
       ON c.ip = f.ip AND c.day = f.day
     LEFT JOIN (SELECT ip, day, SUM(reserved_free) AS held FROM calls WHERE state = 'reserved' GROUP BY ip, day) r
       ON r.ip = f.ip AND r.day = f.day
     WHERE f.credits_used <> COALESCE(c.used, 0) + COALESCE(r.held, 0)
     UNION ALL
     SELECT c.id || ' charged ' || c.charged_free || ' free credits of ' || c.ip || ' day ' || c.day || ', which has no free budget used'
     FROM calls c WHERE c.state = 'settled' AND c.charged_free > 0
       AND NOT EXISTS (SELECT 1 FROM free_tier_usage f WHERE f.ip = c.ip AND f.day = c.day)`
  },
  {
    name: "every stored result points at its settled call, and every settled call with a key has its stored result",
    query: `SELECT c.id, c.idempotency_key, i.state, i.call_id FROM calls c LEFT JOIN idempotency_keys i
       ON i.account_id = c.account_id AND i.idem_key = c.idempotency_key
     WHERE c.state = 'settled' AND c.idempotency_key IS NOT NULL AND i.call_id IS DISTINCT FROM c.id
     UNION ALL
     SELECT i.call_id, i.idem_key, i.state, c.state FROM idempotency_keys i LEFT JOIN calls c ON c.id = i.call_id
     WHERE i.state = 'done' AND (c.id IS NULL OR c.state <> 'settled')`
  },
  {
    name: "each paid top-up credited by exactly one purchase, and no unpaid one credited",
    query: `SELECT t.id || ' of ' || t.account_id || ' is ' || t.state || ', credited ' || n || ' times' AS problem
     FROM (SELECT t.*, (SELECT count(*) FROM purchases p WHERE p.payment_ref = t.payment_ref) AS n FROM topups t) t
     WHERE (t.state = 'succeeded' AND (t.payment_ref IS NULL OR n <> 1))
        OR (t.state <> 'succeeded' AND t.payment_ref IS NOT NULL AND n > 0)
     UNION ALL
     SELECT p.id || ' (' || p.payment_ref || ') of ' || p.account_id || ': no paid top-up' FROM purchases p
     WHERE p.payment_ref LIKE 'topup:%'
       AND NOT EXISTS (SELECT 1 FROM topups t WHERE t.payment_ref = p.payment_ref AND t.state = 'succeeded')`
  },
  {
    // A local subscription's first period is its checkout's purchase; each renewal is one more.
    name: "each local subscription credited once per period renewed (one purchase for each period after the first)",
    query: `SELECT s.id || ' of ' || s.account_id || ': ' || s.periods || ' periods, ' || count(p.id)
            || ' renewals credited' AS problem
     FROM subscriptions s LEFT JOIN purchases p ON p.payment_ref LIKE 'local:' || s.id || ':%'
     WHERE s.rail = 'local'
     GROUP BY s.id, s.account_id, s.periods HAVING count(p.id) <> s.periods - 1`
  },
  {
    // The cap left as the money rule reads it (`svc_key_cap`) on each day that has calls, against
    // the same worked out from the calls in that day's period: a day's or month's spend carried
    // into the next (a period that does not start again) shows on the first day after it.
    name: "every day or month cap's left on each day is its cap less its calls' spend in that day's period (caps roll over)",
    query: `WITH spend AS (${capSpend}),
          days AS (SELECT DISTINCT day FROM calls),
          caps AS (
            SELECT k.id AS key_id, d.day, cap.spend_cap_credits - COALESCE(s.spent, 0) AS left_over
            FROM api_keys k JOIN api_keys cap ON cap.id IN (k.id, k.parent_key_id) CROSS JOIN days d
            LEFT JOIN spend s ON s.key_id = cap.id AND s.period = CASE cap.cap_period
              WHEN 'day' THEN 'day:' || d.day
              WHEN 'month' THEN 'month:' || to_char(date '1970-01-01' + d.day, 'YYYY-MM') ELSE 'total' END
            WHERE cap.spend_cap_credits IS NOT NULL AND k.revoked_at IS NULL
              AND EXISTS (SELECT 1 FROM api_keys c WHERE c.id IN (k.id, k.parent_key_id)
                            AND c.spend_cap_credits IS NOT NULL AND c.cap_period IN ('day', 'month'))),
          worked AS (SELECT key_id, day, MIN(left_over) AS left_over FROM caps GROUP BY key_id, day)
     SELECT 'key ' || w.key_id || ' on day ' || w.day || ': the money rule says its cap has '
            || COALESCE(r.cap_left::text, 'no cap') || ' left, its calls leave ' || w.left_over AS problem
     FROM worked w CROSS JOIN LATERAL svc_key_cap(w.key_id, w.day) r
     WHERE r.cap_left IS DISTINCT FROM w.left_over`
  },
  {
    // The counter the charging statements read must be what the calls say it counts.
    name: "each capped key's spend counter = its (and its children's) charges and reservations in the period",
    query: `SELECT s.key_id || ' ' || s.period || ': counter ' || ks.spent || ', charges ' || s.spent AS problem
     FROM (${capSpend}) s JOIN key_spend ks ON ks.key_id = s.key_id AND ks.period = s.period
     WHERE ks.spent <> s.spent`
  }
]

export const drained: ReadonlyArray<Invariant> = [
  {
    name: "no call left 'reserved'",
    query: "SELECT id, account_id, idempotency_key FROM calls WHERE state = 'reserved'"
  },
  {
    name: "no idempotency claim left 'running'",
    query: "SELECT account_id, idem_key FROM idempotency_keys WHERE state = 'running'"
  }
]

/** Every invariant of a finished run (nothing in flight): `always` (with `$1` now), `quiet` and `drained`. */
export const finished: ReadonlyArray<Invariant> = [...always, ...quiet, ...drained]

/**
 * One statement for a list: one row per broken invariant with its offending rows as JSON. One round
 * trip to the store per list instead of one per check. (The rows are not limited in SQL: a LIMIT
 * turns the planner to nested loops that cost more on the quiet, usual case of no rows.)
 */
export const statementOf = (list: ReadonlyArray<Invariant>): string =>
  `SELECT * FROM (${list
    .map(({ query }, i) => `SELECT ${i} AS n, (SELECT json_agg(bad)::text FROM (${query}) bad) AS detail`)
    .join("\nUNION ALL ")}) checked WHERE detail IS NOT NULL ORDER BY 1`

/** A row in words: its `problem` when it has only that, else its JSON. */
export const showRow = (row: unknown): string => {
  const only = row !== null && typeof row === "object" ? Object.values(row) : []
  return only.length === 1 && typeof only[0] === "string" ? only[0] : JSON.stringify(row)
}

/** The violations in the rows of `statementOf(list)`. */
export const violationsOf = (
  list: ReadonlyArray<Invariant>,
  rows: ReadonlyArray<{ readonly n: number | string; readonly detail: string | null }>
): Array<Violation> =>
  rows.map((row) => {
    const bad = JSON.parse(row.detail!) as Array<unknown>
    return {
      invariant: list[Number(row.n)]!.name,
      rows: bad.slice(0, 20),
      detail: bad.slice(0, 3).map(showRow).join("; ")
    }
  })

/** Checks `list` in one statement on the store in context (the simulation's instances' store). */
export const checkLedger = (list: ReadonlyArray<Invariant>, params: ReadonlyArray<unknown>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql.unsafe<{ n: number; detail: string | null }>(statementOf(list), params)
    return violationsOf(list, rows)
  }).pipe(Effect.orDie)

/** Checks `list` in one statement through a bench session (the storm's, the soak's PostgreSQL). */
export const checkLedgerOn = async (
  db: PgSession,
  list: ReadonlyArray<Invariant>,
  params: ReadonlyArray<unknown>
): Promise<Array<Violation>> =>
  violationsOf(list, await db.query<{ n: number; detail: string | null }>(statementOf(list), params))

export interface Check {
  readonly name: string
  readonly pass: boolean
  readonly detail: string
}

/** Every invariant of a finished run as a pass or fail each, read from `db` at `now` (ms). */
export const ledgerInvariants = async (db: PgSession, now = Date.now()): Promise<Array<Check>> => {
  const broken = new Map(
    (await checkLedgerOn(db, finished, [now])).map((violation) => [violation.invariant, violation])
  )
  return finished.map(({ name }) => ({
    name,
    pass: !broken.has(name),
    detail: broken.get(name)?.detail ?? "holds"
  }))
}

interface ReceiptPage {
  readonly receipts: ReadonlyArray<{
    readonly id: string
    readonly charged: number
    readonly created_at: string
  }>
  readonly cursor: string | null
}

/**
 * Through HTTP only (PGlite's database lives inside the service): each account's receipts of today
 * add up to its usage, and every receipt a client was handed is listed with the same charge.
 */
export const httpInvariants = async (
  baseUrl: string,
  keys: ReadonlyArray<string>,
  seen: ReadonlyMap<string, { readonly charged: number }>
): Promise<Array<Check>> => {
  const today = new Date().toISOString().slice(0, 10)
  const listed = new Map<string, number>()
  const mismatched: Array<string> = []
  await pool(keys, 8, async (key) => {
    let credits = 0
    let calls = 0
    let cursor: string | null = null
    for (let page = 0; page < 1000; page++) {
      const path: string = `/v1/receipts?limit=100${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
      const reply = await call(baseUrl, path, { key })
      if (reply.status !== 200) throw new Error(`GET ${path}: ${reply.status}`)
      const body = reply.body as ReceiptPage
      for (const receipt of body.receipts) {
        listed.set(receipt.id, receipt.charged)
        if (receipt.created_at.startsWith(today)) {
          credits += receipt.charged
          calls += 1
        }
      }
      cursor = body.cursor
      if (cursor === null) break
    }
    const usage = await call(baseUrl, "/v1/usage", { key })
    const facts = usage.body?.today ?? usage.body?.usage?.today
    if (facts === undefined || facts.credits !== credits || facts.calls !== calls) {
      mismatched.push(`${key.slice(0, 14)}...: receipts ${credits}/${calls}, usage ${JSON.stringify(facts)}`)
    }
  })
  const missing = [...seen.entries()].filter(([id, { charged }]) => listed.get(id) !== charged)
  return [
    {
      name: "receipts of today add up to usage today (credits and calls), per account",
      pass: mismatched.length === 0,
      detail: mismatched.length === 0 ? `${keys.length} accounts agree` : mismatched.slice(0, 3).join("; ")
    },
    {
      name: "every receipt handed to a client is listed, with the same charge",
      pass: missing.length === 0,
      detail:
        missing.length === 0
          ? `${seen.size} receipts found`
          : `${missing.length} of ${seen.size} missing or different, e.g. ${missing[0]![0]}`
    }
  ]
}

/** Idempotency keys still claimed as running: which, and how long their lease still holds them. */
export const runningKeys = (db: PgSession, now: number) =>
  db.query<{ idem_key: string; lease_left_ms: number }>(
    `SELECT idem_key, lease_expires_at - ${Math.round(now)} AS lease_left_ms FROM idempotency_keys WHERE state = 'running'`
  )

/** Calls still holding their reservation (and their account's in-flight slot). */
export const reservedCalls = (db: PgSession, now: number) =>
  db.query<{ id: string; idempotency_key: string | null; lease_left_ms: number }>(
    `SELECT id, idempotency_key, lease_expires_at - ${Math.round(now)} AS lease_left_ms FROM calls WHERE state = 'reserved'`
  )
