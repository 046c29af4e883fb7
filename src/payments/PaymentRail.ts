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
