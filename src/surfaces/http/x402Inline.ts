import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { Bearers, Principal } from "../../identity/Bearers.ts"
import { withPayment, type X402, type X402Paid } from "../../payments/X402.ts"
import { encodeX402Header } from "../../payments/x402Wire.ts"

/**
 * The retry of a data call refused INSUFFICIENT_CREDITS, carrying x402's `PAYMENT-SIGNATURE`: the
 * payment is verified, settled and credited first, then the call is metered as any other (the
 * same Idempotency-Key: charged once), and the answer carries `PAYMENT-RESPONSE`. Only a request
 * with the header comes here; a funded call's path is unchanged.
 *
 * An authorization already credited (the retry of a paid retry, or a crash after the credit) pays
 * nothing again: the call runs on the balance it bought, and answers as the Idempotency-Key says.
 * A refused payment is INSUFFICIENT_CREDITS with its `reason`, the payment to make instead, and
 * nothing charged. A call that fails after its payment settled keeps the credits on the balance
 * (never refunded on-chain), and its problem says so.
 */
export const payThenCall =
  (x402: X402["Service"], bearers: Bearers["Service"]) =>
  <E, R>(
    credential: string,
    header: string,
    resource: string,
    call: (principal: Principal, note?: string) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) =>
    Effect.gen(function* () {
      const principal = yield* bearers.authenticateToCharge(credential)
      const paid: X402Paid | undefined = yield* x402
        .pay({ accountId: principal.account.id, header, credits: undefined })
        .pipe(
          Effect.catchTag("InsufficientCredits", (refused) =>
            refused.reason === "authorization_already_used"
              ? Effect.succeed(undefined)
              : Effect.fail(withPayment(refused, x402.required(refused.credits_required, resource)))
          )
        )
      if (paid === undefined) return yield* call(principal)
      // Read again: the purchase changed the balance (and a trial's plan) the principal was read with.
      const response = yield* call(
        yield* bearers.authenticateToCharge(credential),
        `The x402 payment settled (transaction ${paid.transaction}): its ${paid.credits} credits stay on the balance.`
      )
      return HttpServerResponse.setHeader(
        response,
        "payment-response",
        encodeX402Header(paid.paymentResponse)
      )
    })
