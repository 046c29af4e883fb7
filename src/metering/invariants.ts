import { Effect } from "effect"
import type { Receipt } from "./receipt.ts"

/**
 * The money path's cheap invariants, checked where money moved (a settlement, a cache hit's
 * charge): a call is never charged more than it was quoted, and its funding parts (free tier,
 * grant, balance) sum to what it was charged. The SQL money rule decides both; a receipt breaking
 * one is a defect, and the call dies with the receipt named (answered as INTERNAL).
 */
// hot path
export const chargeHolds = (receipt: Receipt): Effect.Effect<void> => {
  const { charged, quoted, funding } = receipt
  if (charged > quoted)
    return Effect.die(
      new Error(`money invariant broken: receipt ${receipt.id} charged ${charged} > quoted ${quoted}`)
    )
  const funded = funding.free_tier + funding.grant + funding.balance
  if (funded !== charged)
    return Effect.die(
      new Error(
        `money invariant broken: receipt ${receipt.id} funding ${funding.free_tier}+${funding.grant}+${funding.balance} = ${funded} != charged ${charged}`
      )
    )
  return Effect.void
}
