import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { InsufficientCredits, InvalidInput } from "../../contract/errors.ts"
import type { Bearers, Principal } from "../../identity/Bearers.ts"
import type { Metered } from "../../metering/meterDataCall.ts"
import { withPayment, type X402, type X402Paid } from "../../payments/X402.ts"
import { decodePaymentSignature, encodeX402Header, isUptoPayment } from "../../payments/x402Wire.ts"
import { lackingCredits, settledNote } from "../common/x402.ts"

const withPaymentResponse = (response: HttpServerResponse.HttpServerResponse, paid: X402Paid) =>
  HttpServerResponse.setHeader(response, "payment-response", encodeX402Header(paid.paymentResponse))

/**
 * The retry of a data call refused INSUFFICIENT_CREDITS, carrying x402's `PAYMENT-SIGNATURE`. Only
 * a request with the header comes here; a funded call's path is unchanged.
 *
 * - `exact`: the payment is verified, settled and credited first, then the call is metered as any
 *   other (the same Idempotency-Key: charged once), and the answer carries `PAYMENT-RESPONSE`.
 * - `upto` (a Permit2 authorization of at most the call's `max_credits`): the call is metered
 *   first; only if it is refused INSUFFICIENT_CREDITS again is what it lacks settled out of the
 *   authorization and credited, and the call metered once more. A call the balance now covers
 *   settles nothing.
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
    meter: (principal: Principal) => Effect.Effect<Metered<InvalidInput>, E, R>,
    respond: (metered: Metered<InvalidInput>, note?: string) => HttpServerResponse.HttpServerResponse,
    priced: (failure: InsufficientCredits) => InsufficientCredits
  ) =>
    Effect.gen(function* () {
      const principal = yield* bearers.authenticateToCharge(credential)
      const decoded = decodePaymentSignature(header)
      if (decoded !== undefined && isUptoPayment(decoded)) {
        const first = yield* meter(principal)
        const short = lackingCredits(first)
        if (short === undefined) return respond(first)
        const paid = yield* x402
          .pay({
            accountId: principal.account.id,
            header,
            credits: short.credits_required - short.credits_available,
            upto: true
          })
          .pipe(
            Effect.catchTag("InsufficientCredits", (refused) =>
              refused.reason === "authorization_already_used"
                ? Effect.succeed(undefined)
                : Effect.fail(withPayment(refused, priced(short).x402))
            )
          )
        if (paid === undefined) return respond(first)
        const second = yield* meter(yield* bearers.authenticateToCharge(credential))
        return withPaymentResponse(respond(second, settledNote(paid)), paid)
      }
      const paid: X402Paid | undefined = yield* x402
        .pay({ accountId: principal.account.id, header, credits: undefined })
        .pipe(
          Effect.catchTag("InsufficientCredits", (refused) =>
            refused.reason === "authorization_already_used"
              ? Effect.succeed(undefined)
              : Effect.fail(withPayment(refused, x402.required(refused.credits_required, resource)))
          )
        )
      if (paid === undefined) return respond(yield* meter(principal))
      // Read again: the purchase changed the balance (and a trial's plan) the principal was read with.
      const answered = yield* meter(yield* bearers.authenticateToCharge(credential))
      return withPaymentResponse(respond(answered, settledNote(paid)), paid)
    })
