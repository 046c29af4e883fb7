import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { localRail, type PaymentRail, PaymentRails } from "./PaymentRail.ts"
import { makeStripeClient, stripeRail } from "./StripeRail.ts"

/** The configured rails: the local test-mode rail always, Stripe when its keys are set. */
export const paymentRailsLayer = Layer.effect(
  PaymentRails,
  Effect.gen(function* () {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const rails = new Map<string, PaymentRail>([["local", localRail(config.baseUrl)]])
    if (Option.isSome(config.stripe)) {
      rails.set(
        "stripe",
        stripeRail({
          stripe: yield* makeStripeClient(config.stripe.value),
          config: config.stripe.value,
          sql,
          baseUrl: config.baseUrl,
          upgradeUrl: config.upgradeUrl
        })
      )
    }
    return rails as ReadonlyMap<string, PaymentRail>
  })
)
