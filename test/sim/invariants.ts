import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { always, checkLedger, type Invariant, quiet } from "../../bench/invariants.ts"

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
  /**
   * The x402 authorizations the simulation's chain settled (test/sim/chain.ts): each one's
   * `payment_ref`, transaction, credits and the account it was made for.
   */
  readonly settled: Array<{
    readonly ref: string
    readonly transaction: string
    readonly credits: number
    readonly account: string
  }>
}

/** An empty model: nothing answered, credited or paid yet. */
export const emptyModel = (): Model => ({
  answers: [],
  answersStored: 0,
  analyzeAt: 64,
  credited: new Map(),
  paid: new Map(),
  settled: []
})

export type { Violation } from "../../bench/invariants.ts"

/** The invariants that hold at every moment (`always`, bench/invariants.ts): after every step and while calls are held. */
export const alwaysChecks = (now: number) => checkLedger(always, [now])

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
 * The simulation's own invariants of a quiet ledger (no call in flight), checked with the shared
 * `quiet` list: against what the clients were answered and the reference model. `$1`: the credits
 * each account was told it got (claim grants, paid checkouts, x402 payments the chain settled),
 * `$2`: the checkout sessions paid, with their accounts (both JSON objects), `$3`: the x402
 * authorizations the chain settled (a JSON array).
 */
const own: ReadonlyArray<Invariant> = [
  // Against what the clients were answered.
  {
    name: "every 200 has its receipt, as charged, and one receipt per Idempotency-Key",
    // One pass over the answers and their calls, and the receipts of a key told apart by their
    // least and greatest (no sort of each key's receipts).
    query: `SELECT CASE
              WHEN c.id IS NULL THEN 'a 200 answered receipt ' || a.receipt || ', which is not a settled call'
              WHEN c.account_id <> a.account OR c.idempotency_key IS DISTINCT FROM a.idem
                THEN 'receipt ' || c.id || ' is of ' || c.account_id || ' ' || COALESCE(c.idempotency_key, 'null')
                     || ', answered to ' || a.account || ' ' || a.idem
              ELSE 'receipt ' || c.id || ' charged ' || c.charged || ', the answer said ' || a.charged END AS problem
     FROM sim_answers a LEFT JOIN calls c ON c.id = a.receipt AND c.state = 'settled'
     WHERE c.id IS NULL OR c.account_id <> a.account OR c.idempotency_key IS DISTINCT FROM a.idem
        OR c.charged <> a.charged
     UNION ALL
     SELECT account || ' ' || idem || ' answered with ' || min(receipt) || ' and with ' || max(receipt)
     FROM sim_answers GROUP BY account, idem HAVING min(receipt) <> max(receipt)`
  },
  {
    name: "no charge without a 200 (every charged receipt was answered to a client)",
    query: `SELECT c.id || ' charged ' || c.charged AS problem FROM calls c
     WHERE c.state = 'settled' AND c.charged > 0 AND NOT EXISTS (SELECT 1 FROM sim_answers a WHERE a.receipt = c.id)`
  },
  // The reference model: what each account has left and each IP's free budget used, computed from
  // the accepted operations (fresh 200s, each receipt counted once, when first answered: a replay
  // may be the first a client hears of it; the grants and payments the clients were told of; the
  // top-ups the store says it paid), less what a reservation still holds: a call whose refund was
  // cut off (its connection dropped) stays reserved until its lease runs out and a sweeper refunds
  // it, which "no reservation stranded past its lease" holds to.
  {
    name: "the balances equal the reference model's",
    query: `WITH once AS (SELECT DISTINCT ON (receipt) receipt, account, free, spent FROM sim_answers ORDER BY receipt, seq),
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
  },
  {
    name: "every x402 purchase is one settled authorization of the chain, and every settled authorization is credited once",
    query: `WITH settled AS (SELECT * FROM json_to_recordset($3::json)
                        AS x(ref text, transaction text, credits bigint, account text))
     SELECT 'authorization ' || s.ref || ' settled on the chain in ' || s.transaction || ', credited '
            || count(p.id) || ' times' AS problem
     FROM settled s LEFT JOIN purchases p ON p.payment_ref = s.ref
     GROUP BY s.ref, s.transaction HAVING count(p.id) <> 1
     UNION ALL
     SELECT 'x402 purchase ' || p.id || ' (' || p.payment_ref || ', ' || p.credits || ' credits to ' || p.account_id
            || ', transaction ' || COALESCE(p.transaction_hash, 'none') || ') is no settled authorization of the chain'
     FROM purchases p LEFT JOIN settled s ON s.ref = p.payment_ref
     WHERE p.rail = 'x402' AND (s.ref IS NULL OR s.transaction IS DISTINCT FROM p.transaction_hash
       OR s.credits <> p.credits OR s.account <> p.account_id)`
  },
  {
    name: "an account whose subscription ended, with none active, is no longer on production",
    query: `SELECT a.id || ' is on ' || a.plan || ' with its subscription ended' AS problem FROM accounts a
     WHERE a.plan = 'production'
       AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.account_id = a.id AND s.status = 'canceled')
       AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.account_id = a.id AND s.status = 'active')`
  },
  {
    name: "every paid checkout applied exactly once, to its account",
    // A checkout's purchase is `local:<session>`; a subscription's renewal, `local:<subscription>:<period>`.
    query: `WITH bought AS (SELECT account_id, count(*) AS n FROM purchases
                     WHERE payment_ref LIKE 'local:%' AND payment_ref NOT LIKE 'local:%:%' GROUP BY account_id),
          paid AS (SELECT value AS account, count(*) AS n FROM json_each_text($2::json) GROUP BY value)
     SELECT COALESCE(b.account_id, p.account) || ': ' || COALESCE(p.n, 0) || ' checkouts paid, '
            || COALESCE(b.n, 0) || ' purchases applied' AS problem
     FROM bought b FULL JOIN paid p ON p.account = b.account_id
     WHERE COALESCE(b.n, 0) <> COALESCE(p.n, 0)`
  }
]

const ledger: ReadonlyArray<Invariant> = [...quiet, ...own]

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
    return yield* checkLedger(ledger, [
      JSON.stringify(Object.fromEntries(model.credited)),
      JSON.stringify(Object.fromEntries(model.paid)),
      JSON.stringify(model.settled)
    ])
  }).pipe(Effect.orDie)
