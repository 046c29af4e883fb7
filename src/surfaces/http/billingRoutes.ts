import { Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../../config.ts"
import { BaseApi, ClientIp } from "../../contract/api.ts"
import {
  InsufficientCredits,
  InvalidInput,
  KeyRequired,
  NotFound,
  Unauthorized
} from "../../contract/errors.ts"
import { managementTokenPattern, spendKeyPattern } from "../../domain/secrets.ts"
import { Bearers, selectAccount } from "../../identity/Bearers.ts"
import { Checkout, type CheckoutStarter } from "../../payments/Checkout.ts"
import { withPayment, X402 } from "../../payments/X402.ts"
import { encodeX402Header } from "../../payments/x402Wire.ts"
import { Problems } from "../common/problems.ts"
import { answering, bearerOf } from "./governanceRoutes.ts"

/**
 * Checkout: a spend key's account, a management token's chosen account, or without a bearer a new
 * account whose key this API hands to the program once it is paid.
 */
export const BillingRoutes = HttpApiBuilder.group(BaseApi, "billing", (handlers) =>
  Effect.gen(function* () {
    const checkout = yield* Checkout
    const bearers = yield* Bearers
    const x402 = yield* X402
    const { baseUrl } = yield* AppConfig
    const answer = answering(yield* Problems)
    return handlers
      .handle("startCheckout", ({ payload }) =>
        answer(
          Effect.gen(function* () {
            const bearer = bearerOf(yield* HttpServerRequest.HttpServerRequest)
            let starter: CheckoutStarter
            if (bearer === undefined) {
              starter = { origin: "agent", clientIp: yield* ClientIp }
            } else if (managementTokenPattern.test(bearer)) {
              const governor = yield* bearers.governor(bearer)
              starter = {
                origin: "management",
                accountId: (yield* selectAccount(governor, payload.account_id)).id
              }
            } else if (spendKeyPattern.test(bearer)) {
              starter = { origin: "spend_key", accountId: (yield* bearers.authenticate(bearer)).account.id }
            } else {
              return yield* new Unauthorized({
                message:
                  "The bearer is neither a spend key nor a management token of this service; send one, or none to buy a new key."
              })
            }
            return yield* checkout.start({ pack: payload.pack, rail: payload.rail, starter })
          })
        )
      )
      .handle("getCheckout", ({ params }) => answer(checkout.status(params.session_id)))
      .handle("buyCreditsX402", ({ payload, headers }) =>
        answer(
          Effect.gen(function* () {
            const bearer = bearerOf(yield* HttpServerRequest.HttpServerRequest)
            if (bearer === undefined)
              return yield* new KeyRequired({
                message: "Send the spend key whose account buys the credits: Authorization: Bearer <key>."
              })
            if (!spendKeyPattern.test(bearer))
              return yield* new Unauthorized({
                message:
                  "The bearer is not a spend key of this service; x402 credits are bought for a spend key's account."
              })
            const accountId = (yield* bearers.authenticate(bearer)).account.id
            if (Option.isNone(x402.config))
              return yield* new NotFound({
                message: "This service does not take x402 payments; the offers name the rails it takes."
              })
            const config = x402.config.value
            if (payload.credits < config.minCredits)
              return yield* new InvalidInput({
                message: `An x402 payment buys at least ${config.minCredits} credits.`,
                param: "credits"
              })
            const required = x402.required(payload.credits, `${baseUrl}/v1/credits/x402`)
            const header = headers["payment-signature"]
            if (header === undefined) {
              const { spendable } = yield* x402.standing(accountId)
              return yield* new InsufficientCredits({
                message: `Pay ${payload.credits} credits with x402: sign the PAYMENT-REQUIRED header's payment and send it as PAYMENT-SIGNATURE with the same request.`,
                credits_required: payload.credits,
                credits_available: spendable,
                x402: required
              })
            }
            const paid = yield* x402
              .pay({ accountId, header, credits: payload.credits })
              .pipe(
                Effect.catchTag("InsufficientCredits", (refused) =>
                  Effect.fail(withPayment(refused, required))
                )
              )
            const standing = yield* x402.standing(accountId)
            return HttpServerResponse.jsonUnsafe(
              {
                credits_added: paid.credits,
                balance_credits: standing.balanceCredits,
                plan: standing.plan,
                transaction: paid.transaction
              },
              { headers: { "payment-response": encodeX402Header(paid.paymentResponse) } }
            )
          })
        )
      )
  })
)
