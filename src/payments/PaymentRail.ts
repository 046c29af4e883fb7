import { Context, Data, Effect } from "effect"
import type { Pack } from "../domain/plans.ts"

/** A checkout session as a rail sees it when the payer is sent to pay. */
export interface OpenSession {
  /** The public id (`chk_...`): receipts, the operator's lists, the rail's metadata. */
  readonly id: string
  /** The secret `session_id` the API hands out; the local pages are addressed by it. */
  readonly token: string
  readonly pack: Pack
  readonly accountId: string | undefined
  readonly expiresAt: number
}

/** The rail could not be reached or refused: the checkout is not created. */
export class RailUnavailable extends Data.TaggedError("RailUnavailable")<{
  readonly rail: string
  readonly message: string
}> {}

/** An off-session charge of a saved payment method, for an automatic top-up. */
export interface SavedCharge {
  readonly topupId: string
  readonly accountId: string
  readonly amountUsdCents: number
  readonly description: string
}

/**
 * What the provider said to an off-session charge: accepted (credited only once its verified
 * webhook reports it paid), or declined (no saved method, a refused card), which is final.
 */
export type SavedChargeOutcome =
  | { readonly _tag: "Accepted"; readonly paymentRef: string }
  | { readonly _tag: "Declined"; readonly message: string }

/**
 * One way to take money. Every rail ends in the same crediting path (`Checkout.complete` and
 * `Credits.applyPurchase`); a rail only says where the payer goes and, for subscriptions and the
 * billing portal, speaks to its own provider.
 */
export interface PaymentRail {
  readonly name: string
  readonly begin: (
    session: OpenSession
  ) => Effect.Effect<
    { readonly checkoutUrl: string; readonly externalId?: string | undefined },
    RailUnavailable
  >
  /** The provider's billing portal for an account, when the account is its customer. */
  readonly portal: (accountId: string) => Effect.Effect<string | undefined, RailUnavailable>
  /**
   * Automatic top-up on a rail that keeps payment methods: whether the account is the provider's
   * customer (an earlier checkout saved its payment method for future use), and an off-session
   * charge of that method. A rail without them (the local rail pays a top-up at once, in test mode)
   * leaves both out.
   */
  readonly saved?: {
    readonly isCustomer: (accountId: string) => Effect.Effect<boolean>
    readonly charge: (charge: SavedCharge) => Effect.Effect<SavedChargeOutcome, RailUnavailable>
  }
}

/** The configured rails by name, in the order offers list them (`AppConfig.checkoutRails`). */
export class PaymentRails extends Context.Service<PaymentRails, ReadonlyMap<string, PaymentRail>>()(
  "payments/PaymentRails"
) {}

/** The built-in test-mode rail: `/checkout/{session_id}` is a page with a pay button. */
export const localRail = (baseUrl: string): PaymentRail => ({
  name: "local",
  begin: (session) => Effect.succeed({ checkoutUrl: `${baseUrl}/checkout/${session.token}` }),
  portal: () => Effect.succeed(undefined)
})
