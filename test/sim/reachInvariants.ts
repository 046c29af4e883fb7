import { Effect } from "effect"
import { type SimChain, simX402 } from "./chain.ts"
import { checkAll } from "./invariants.ts"

/**
 * The invariants of the paths the simulation reaches beyond the metered call: each a name and a
 * query whose rows are its violations, as in `invariants.ts`.
 *
 * x402, on a quiet ledger: `$1` is every authorization the simulation's chain settled (its
 * `payment_ref`, transaction, credits and the account it was made for), as a JSON array.
 */
const x402Ledger: ReadonlyArray<readonly [string, string]> = [
  [
    "every x402 purchase is one settled authorization of the chain, and every settled authorization is credited once",
    `WITH settled AS (SELECT * FROM json_to_recordset($1::json)
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
  ]
]

/**
 * A spend cap's refusal, checked when it is answered: `$1` the key that called, `$2` the UTC day
 * (days since 1970-01-01), `$3` the call's quote, `$4` what the refusal said the cap has left. Each
 * cap of the key (its own, its parent's) has left its amount less what its calls spent in the
 * period of that day (settled ones as charged, reserved ones at their quote), worked out here from
 * the calls; the refusal must name the least of them and be above it. A cap that never rolls over
 * (a day's or month's spend counted into the next) refuses a call the new period allows.
 */
const capRefusal: ReadonlyArray<readonly [string, string]> = [
  [
    "a spend cap refuses only what its period's spend leaves no room for, and says what is left (periods roll over)",
    `WITH caps AS (
       SELECT cap.id, cap.cap_period, cap.spend_cap_credits - COALESCE((
         SELECT SUM(CASE WHEN c.state = 'reserved' THEN c.quoted ELSE c.charged END)
         FROM calls c JOIN api_keys ck ON ck.id = c.key_id
         WHERE (ck.id = cap.id OR ck.parent_key_id = cap.id) AND c.state IN ('reserved', 'settled')
           AND CASE cap.cap_period
             WHEN 'day' THEN c.day = $2::int
             WHEN 'month' THEN to_char(date '1970-01-01' + c.day, 'YYYY-MM') = to_char(date '1970-01-01' + $2::int, 'YYYY-MM')
             ELSE true END), 0) AS left_over
       FROM api_keys k JOIN api_keys cap ON cap.id IN (k.id, k.parent_key_id)
       WHERE k.id = $1 AND cap.spend_cap_credits IS NOT NULL)
     SELECT 'key ' || $1 || ' refused a call quoted ' || $3 || ' on day ' || $2 || ' saying its cap has '
            || $4 || ' left; from its calls: ' || COALESCE(string_agg(id || ' (' || cap_period || ') '
            || left_over, ', '), 'no cap') AS problem
     FROM caps
     HAVING COALESCE(MIN(left_over), -1) <> $4::bigint OR NOT bool_or(left_over < $3::bigint)`
  ]
]

export const capRefusalChecks = (input: {
  readonly key: string
  readonly day: number
  readonly quoted: number
  readonly left: number
}) => checkAll(capRefusal, [input.key, input.day, input.quoted, input.left]).pipe(Effect.orDie)

/**
 * Every capped key's cap left, as the money rule reads it (`svc_key_cap` on today), against the
 * same worked out from the calls in today's period: `$1` is today (days since 1970-01-01). Checked
 * on a quiet ledger; across midnight (the run starts at 23:40 on 31 December) it holds only if
 * each day's and month's spend starts again.
 */
const capsLedger: ReadonlyArray<readonly [string, string]> = [
  [
    "every capped key's cap left is its cap less its calls' spend in the period of today (day and month caps roll over)",
    `WITH caps AS (
       SELECT k.id AS key_id, cap.spend_cap_credits - COALESCE((
         SELECT SUM(CASE WHEN c.state = 'reserved' THEN c.quoted ELSE c.charged END)
         FROM calls c JOIN api_keys ck ON ck.id = c.key_id
         WHERE (ck.id = cap.id OR ck.parent_key_id = cap.id) AND c.state IN ('reserved', 'settled')
           AND CASE cap.cap_period
             WHEN 'day' THEN c.day = $1::int
             WHEN 'month' THEN to_char(date '1970-01-01' + c.day, 'YYYY-MM') = to_char(date '1970-01-01' + $1::int, 'YYYY-MM')
             ELSE true END), 0) AS left_over
       FROM api_keys k JOIN api_keys cap ON cap.id IN (k.id, k.parent_key_id)
       WHERE cap.spend_cap_credits IS NOT NULL AND k.revoked_at IS NULL),
     worked AS (SELECT key_id, MIN(left_over) AS left_over FROM caps GROUP BY key_id)
     SELECT 'key ' || w.key_id || ': the money rule says its cap has ' || COALESCE(r.cap_left::text, 'no cap')
            || ' left today, its calls leave ' || w.left_over AS problem
     FROM worked w CROSS JOIN LATERAL svc_key_cap(w.key_id, $1::int) r
     WHERE r.cap_left IS DISTINCT FROM w.left_over`
  ]
]

export const capsLedgerChecks = (day: number) => checkAll(capsLedger, [day]).pipe(Effect.orDie)

/** The settled authorizations of `chain` as the x402 check reads them. */
const settledOf = (chain: SimChain) =>
  JSON.stringify(
    [...chain.used.entries()].map(([key, used]) => ({
      ref: `x402:${simX402.network}:${simX402.asset.toLowerCase()}:${key}`,
      transaction: used.transaction,
      credits: Number(used.value / BigInt(simX402.atomicPerCredit)),
      account: used.account
    }))
  )

/** The reach invariants of a quiet ledger (one statement). */
export const reachLedgerChecks = (chain: SimChain) =>
  checkAll(x402Ledger, [settledOf(chain)]).pipe(Effect.orDie)
