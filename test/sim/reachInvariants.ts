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
