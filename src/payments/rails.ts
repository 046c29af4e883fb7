import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { Audit } from "../services/Audit.ts"
import { Credits } from "../services/Credits.ts"
import { WebhookEvents } from "../services/WebhookEvents.ts"
import { Checkout } from "./Checkout.ts"
import { localRail, type PaymentRail, PaymentRails } from "./PaymentRail.ts"
import { makeStripeClient, makeStripeEvents, stripeRail } from "./StripeRail.ts"
import { Topups } from "./Topups.ts"

/**
 * The offered rails (`AppConfig.checkoutRails`, from `PAYMENT_RAILS`) and nothing else: a rail
 * that is not offered has no implementation here, so nothing can start or pay a checkout on it.
 */
export const paymentRailsLayer = Layer.effect(
  PaymentRails,
  Effect.gen(function* () {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const rails = new Map<string, PaymentRail>()
    for (const name of config.checkoutRails) {
      if (name === "local") rails.set("local", localRail(config.baseUrl))
      if (name === "stripe" && Option.isSome(config.stripe)) {
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
    }
    if (rails.has("local") && Option.isSome(config.stripe)) {
      yield* Effect.logWarning(
        "PAYMENT_RAILS offers the local rail beside Stripe: local checkouts credit accounts without any payment (test mode). Remove local from PAYMENT_RAILS in production."
      )
    }
    return rails as ReadonlyMap<string, PaymentRail>
  })
)

/**
 * Stripe's verified events applied to the service: completed checkouts, paid invoices (a renewal's
 * `subscription.renewed` event), ended subscriptions, and automatic top-ups' PaymentIntents.
 */
export const stripeEvents = Effect.gen(function* () {
  const config = yield* AppConfig
  const checkout = yield* Checkout
  const credits = yield* Credits
  const topups = yield* Topups
  const webhookEvents = yield* WebhookEvents
  const audit = yield* Audit
  return makeStripeEvents({
    sql: yield* SqlClient.SqlClient,
    complete: checkout.complete,
    endSubscription: checkout.endStripeSubscription,
    applyPurchase: credits.applyPurchase,
    packs: config.policy.packs,
    renewed: (renewal) =>
      Effect.andThen(
        audit.record(renewal.accountId, "subscription.renewed", renewal.pack.pack),
        webhookEvents.emit(renewal.accountId, "subscription.renewed", {
          pack: renewal.pack.pack,
          rail: renewal.rail,
          periods: renewal.periods,
          current_period_end: new Date(renewal.periodEnd).toISOString()
        })
      ).pipe(Effect.asVoid),
    topupPaid: topups.paid,
    topupFailed: topups.failed
  })
})
