import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { BaseApi, ClientIp } from "../../contract/api.ts"
import { Unauthorized } from "../../contract/errors.ts"
import { managementTokenPattern, spendKeyPattern } from "../../domain/secrets.ts"
import { Bearers, selectAccount } from "../../identity/Bearers.ts"
import { Checkout, type CheckoutStarter } from "../../payments/Checkout.ts"
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
  })
)
