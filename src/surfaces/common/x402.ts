import type { InsufficientCredits } from "../../contract/errors.ts"
import type { Metered } from "../../metering/meterDataCall.ts"
import type { X402Paid } from "../../payments/X402.ts"

/**
 * What a metered call lacks that an x402 payment lifts: its INSUFFICIENT_CREDITS, unless a key cap's
 * (paying does not raise a cap). REST and MCP settle an `upto` payment for exactly this shortfall.
 */
export const lackingCredits = <E>(metered: Metered<E>): InsufficientCredits | undefined => {
  const failure: unknown = metered.result._tag === "Failure" ? metered.result.failure : undefined
  return typeof failure === "object" &&
    failure !== null &&
    (failure as { readonly _tag?: unknown })._tag === "InsufficientCredits" &&
    (failure as InsufficientCredits).limit !== "key_cap"
    ? (failure as InsufficientCredits)
    : undefined
}

/** What a paid call's problem says of the payment that settled before it failed. */
export const settledNote = (paid: X402Paid) =>
  `The x402 payment settled (transaction ${paid.transaction}): its ${paid.credits} credits stay on the balance.`
