import { checkLedger, type Invariant } from "../../bench/invariants.ts"

/**
 * The simulation's client-side checks of the paths it reaches beyond the metered call, each a name
 * and a query whose rows are its violations (as in bench/invariants.ts), with the parameters only
 * the client knows. The ledger's own invariants of those paths are in bench/invariants.ts (the
 * caps) and test/sim/invariants.ts (x402 against the simulation's chain).
 */

/**
 * A spend cap's refusal, checked when it is answered: `$1` the key that called, `$2` the UTC day
 * (days since 1970-01-01), `$3` the call's quote, `$4` what the refusal said the cap has left. Each
 * cap of the key (its own, its parent's) has left its amount less what its calls spent in the
 * period of that day (settled ones as charged, reserved ones at their quote), worked out here from
 * the calls; the refusal must name the least of them and be above it. A cap that never rolls over
 * (a day's or month's spend counted into the next) refuses a call the new period allows.
 */
const capRefusal: ReadonlyArray<Invariant> = [
  {
    name: "a spend cap refuses only what its period's spend leaves no room for, and says what is left (periods roll over)",
    query: `WITH caps AS (
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
  }
]

export const capRefusalChecks = (input: {
  readonly key: string
  readonly day: number
  readonly quoted: number
  readonly left: number
}) => checkLedger(capRefusal, [input.key, input.day, input.quoted, input.left])
