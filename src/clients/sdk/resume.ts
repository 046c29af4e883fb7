import { Effect } from "effect"
import type { Offer } from "../../contract/offer.ts"
import { withIdempotencyKey } from "./SvcClient.ts"

/** The offer a payment-fixable problem carries (INSUFFICIENT_CREDITS, TRIAL_CAP_EXCEEDED, ...), if any. */
export const offerOf = (error: unknown): Offer | undefined => {
  const offer = (error as { readonly offer?: Offer } | undefined)?.offer
  return offer !== undefined && typeof offer === "object" && "resume" in offer ? offer : undefined
}

/**
 * Runs a data call; when it fails with an offer, runs `pay` (buy a pack, wait for the payment) and
 * then resumes as the offer says: `retry_same_idempotency_key` resends the same call (charged once
 * even if the first attempt went through), the other actions send it afresh. One payment at most.
 */
export const followingOffer = <A, E, R, E2, R2>(
  call: Effect.Effect<A, E, R>,
  pay: (offer: Offer, error: E) => Effect.Effect<void, E2, R2>
): Effect.Effect<A, E | E2, R | R2> =>
  Effect.suspend(() => {
    const idempotencyKey = crypto.randomUUID()
    return withIdempotencyKey(idempotencyKey)(call).pipe(
      Effect.catch((error: E) => {
        const offer = offerOf(error)
        if (offer === undefined) return Effect.fail(error)
        const again =
          offer.resume.action === "retry_same_idempotency_key"
            ? withIdempotencyKey(idempotencyKey)(call)
            : withIdempotencyKey(crypto.randomUUID())(call)
        return Effect.andThen(pay(offer, error), again)
      })
    )
  })
