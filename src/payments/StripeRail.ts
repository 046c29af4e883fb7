import { Clock, Effect, Redacted, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type Stripe from "stripe"
import type { StripeConfig } from "../config.ts"
import { upgradeUrl } from "../contract/problem.ts"
import type { Pack } from "../domain/plans.ts"
import type { PurchaseInput } from "../services/Credits.ts"
import * as Row from "../store/rows.ts"
import type { Payment } from "./Checkout.ts"
import {
  type OpenSession,
  type PaymentRail,
  RailUnavailable,
  type SavedCharge,
  type SavedChargeOutcome
} from "./PaymentRail.ts"

/**
 * The Stripe SDK for the configured account: Stripe's API, or `STRIPE_API_URL` (a local fake in
 * tests, where retries would only slow a failure down). Idempotency keys make retries safe. The SDK
 * (a couple of hundred modules) is loaded here, so a service without Stripe never loads it.
 */
export const makeStripeClient = (config: StripeConfig): Effect.Effect<Stripe> =>
  Effect.map(
    Effect.promise(() => import("stripe")),
    ({ default: Stripe }) => {
      const api = config.apiUrl === undefined ? undefined : new URL(config.apiUrl)
      return new Stripe(Redacted.value(config.secretKey), {
        telemetry: false,
        timeout: 20_000,
        maxNetworkRetries: api === undefined ? 2 : 0,
        ...(api === undefined
          ? {}
          : {
              host: api.hostname,
              port: api.port === "" ? (api.protocol === "http:" ? 80 : 443) : Number(api.port),
              protocol: api.protocol === "http:" ? ("http" as const) : ("https" as const)
            })
      })
    }
  )

/** What the service writes on Stripe's objects, and reads back from its events. */
const checkoutMetadata = (session: OpenSession) => ({
  checkout_id: session.id,
  ...(session.accountId === undefined ? {} : { account_id: session.accountId })
})

const decodeCustomers = Row.decoder(Schema.Struct({ customer_id: Schema.String }), "stripe_customers")

/** An SDK call; any failure (network, Stripe's refusal) means the rail is unavailable now. */
const calling = <A>(what: string, call: () => Promise<A>) =>
  Effect.tryPromise({
    try: call,
    catch: (cause) => {
      const type =
        typeof cause === "object" && cause !== null && "type" in cause ? String(cause.type) : "error"
      return new RailUnavailable({ rail: "stripe", message: `${what}: ${type}` })
    }
  }).pipe(Effect.tapError((failure) => Effect.logWarning("stripe rail", failure.message)))

/**
 * The Stripe rail: a Checkout Session (`payment` mode for one-time packs, `subscription` mode for
 * monthly ones) for the checkout's pack; the payer comes back to the local checkout page, which
 * shows the status the webhook set. Credits land only from verified webhooks (`stripeWebhook.ts`).
 */
export const stripeRail = (options: {
  readonly stripe: Stripe
  readonly config: StripeConfig
  readonly sql: SqlClient.SqlClient
  readonly baseUrl: string
  readonly upgradeUrl: string
}): PaymentRail => {
  const { stripe, config, sql, baseUrl } = options

  const storedCustomer = (accountId: string) =>
    sql`SELECT customer_id FROM stripe_customers WHERE account_id = ${accountId}`.pipe(
      Effect.flatMap(decodeCustomers),
      Effect.map((rows) => rows[0]?.customer_id),
      Effect.orDie
    )

  /** The account's Stripe customer, created once (the idempotency key covers two racing instances). */
  const customerOf = (accountId: string) =>
    Effect.gen(function* () {
      const known = yield* storedCustomer(accountId)
      if (known !== undefined) return known
      const created = yield* calling("customers.create", () =>
        stripe.customers.create(
          { metadata: { account_id: accountId } },
          { idempotencyKey: `customer-${accountId}` }
        )
      )
      yield* sql`INSERT INTO stripe_customers (account_id, customer_id) VALUES (${accountId}, ${created.id})
        ON CONFLICT DO NOTHING`.pipe(Effect.orDie)
      return (yield* storedCustomer(accountId)) ?? created.id
    })

  const begin = (session: OpenSession) =>
    Effect.gen(function* () {
      const { pack } = session
      const subscription = pack.mode === "subscription"
      const customer = session.accountId === undefined ? undefined : yield* customerOf(session.accountId)
      const price = config.prices[pack.pack]
      const lineItem: Stripe.Checkout.SessionCreateParams.LineItem =
        price === undefined
          ? {
              quantity: 1,
              price_data: {
                currency: "usd",
                unit_amount: pack.price_usd_cents,
                product_data: { name: `${pack.pack} credits` },
                ...(subscription ? { recurring: { interval: "month" as const } } : {})
              }
            }
          : { price, quantity: 1 }
      const metadata = checkoutMetadata(session)
      const created = yield* calling("checkout.sessions.create", () =>
        stripe.checkout.sessions.create(
          {
            mode: subscription ? "subscription" : "payment",
            line_items: [lineItem],
            client_reference_id: session.id,
            metadata,
            success_url: `${baseUrl}/checkout/${session.token}`,
            cancel_url: upgradeUrl(options.upgradeUrl, session.accountId),
            // A keyless one-time checkout still gets a customer, so its new account has a portal.
            ...(customer === undefined
              ? subscription
                ? {}
                : { customer_creation: "always" as const }
              : { customer }),
            // The subscription's own metadata reaches its invoices: an `invoice.paid` arriving
            // before `checkout.session.completed` still names the checkout. A one-time payment
            // saves its card on the customer for automatic top-ups (a subscription's is saved anyway).
            ...(subscription
              ? { subscription_data: { metadata } }
              : { payment_intent_data: { metadata, setup_future_usage: "off_session" as const } })
          },
          { idempotencyKey: `checkout-${session.id}` }
        )
      )
      if (created.url === null)
        return yield* new RailUnavailable({ rail: "stripe", message: "checkout.sessions.create: no url" })
      return { checkoutUrl: created.url, externalId: created.id }
    })

  const portal = (accountId: string) =>
    Effect.gen(function* () {
      const customer = yield* storedCustomer(accountId)
      if (customer === undefined) return undefined
      const created = yield* calling("billingPortal.sessions.create", () =>
        stripe.billingPortal.sessions.create({
          customer,
          return_url: upgradeUrl(options.upgradeUrl, accountId)
        })
      )
      return created.url
    })

  /** A payment method the account's customer has saved (the most recent), if any. */
  const savedMethod = (customer: string) =>
    Effect.map(
      calling("customers.listPaymentMethods", () =>
        stripe.customers.listPaymentMethods(customer, { limit: 1 })
      ),
      (list) => list.data[0]?.id
    )

  const isCustomer = (accountId: string) =>
    Effect.gen(function* () {
      const customer = yield* storedCustomer(accountId)
      return customer !== undefined
    })

  /**
   * An off-session PaymentIntent for a top-up, confirmed at once. The top-up's id is the idempotency
   * key: asking again after a lost answer gets the same PaymentIntent, never a second charge. A
   * refused card is Declined (final); anything else (Stripe unreachable) RailUnavailable, tried again.
   */
  const charge = (input: SavedCharge) =>
    Effect.gen(function* () {
      const customer = yield* storedCustomer(input.accountId)
      if (customer === undefined)
        return { _tag: "Declined", message: "no Stripe customer: buy a pack once by checkout first" } as const
      const method = yield* savedMethod(customer)
      if (method === undefined)
        return {
          _tag: "Declined",
          message: "no saved payment method: a new checkout saves one for automatic top-ups"
        } as const
      const created = yield* Effect.tryPromise({
        try: () =>
          stripe.paymentIntents.create(
            {
              amount: input.amountUsdCents,
              currency: "usd",
              customer,
              payment_method: method,
              off_session: true,
              confirm: true,
              description: input.description,
              metadata: { topup_id: input.topupId, account_id: input.accountId }
            },
            { idempotencyKey: `topup-${input.topupId}` }
          ),
        catch: (cause) => cause
      }).pipe(Effect.result)
      if (created._tag === "Success")
        return { _tag: "Accepted", paymentRef: `stripe:${created.success.id}` } satisfies SavedChargeOutcome
      const error = created.failure as { readonly type?: unknown; readonly message?: unknown }
      if (error.type === "StripeCardError" || error.type === "card_error")
        return {
          _tag: "Declined",
          message: `the card was declined (${typeof error.message === "string" ? error.message : "card_error"})`
        } satisfies SavedChargeOutcome
      yield* Effect.logWarning("stripe rail", `paymentIntents.create: ${String(error.type ?? "error")}`)
      return yield* new RailUnavailable({
        rail: "stripe",
        message: `paymentIntents.create: ${String(error.type ?? "error")}`
      })
    })

  return { name: "stripe", begin, portal, saved: { isCustomer, charge } }
}

const idOf = (value: string | { readonly id: string } | null | undefined) =>
  value === null || value === undefined ? undefined : typeof value === "string" ? value : value.id

const decodeSubscriptionRows = Row.decoder(
  Schema.Struct({
    id: Schema.String,
    account_id: Schema.String,
    pack: Schema.Literals(["flex", "production"]),
    periods: Row.Int
  }),
  "subscriptions"
)

/** The subscription an invoice bills, and the metadata written on it at checkout. */
const invoiceSubscription = (invoice: Stripe.Invoice) => {
  const details = invoice.parent?.subscription_details ?? undefined
  // Before API version 2025-03-31 the subscription was a top-level field of the invoice.
  const legacy = (invoice as { readonly subscription?: string | { readonly id: string } | null }).subscription
  return {
    subscriptionId: idOf(details?.subscription) ?? idOf(legacy),
    checkoutId: details?.metadata?.checkout_id
  }
}

/**
 * The end of the period an invoice pays for: its subscription line's period (an invoice's own
 * `period_end` is the end of the period billed in arrears, the creation time for a first invoice).
 */
const invoicePeriodEnd = (invoice: Stripe.Invoice) =>
  Math.max(invoice.period_end, ...(invoice.lines?.data ?? []).map((line) => line.period?.end ?? 0)) * 1000

/**
 * Applies verified Stripe events, each event id once: the event's row in `stripe_events` is
 * written in the same transaction as its effect, so of two deliveries (two instances, or
 * Stripe's retries) only one applies it, and a failed application leaves it to Stripe's retry.
 * Payments go through `Checkout.complete` and `Credits.applyPurchase`, which apply a payment once
 * by its reference, whatever the order of the events reporting it.
 */
export const makeStripeEvents = (deps: {
  readonly sql: SqlClient.SqlClient
  readonly endSubscription: (stripeSubscriptionId: string) => Effect.Effect<boolean, SqlError>
  readonly complete: (
    sessionPublicId: string,
    payment: Payment
  ) => Effect.Effect<string | undefined, SqlError>
  readonly applyPurchase: (input: PurchaseInput) => Effect.Effect<boolean, SqlError>
  readonly packs: ReadonlyArray<Pack>
  /** A subscription period paid after the first (the `subscription.renewed` event). */
  readonly renewed: (input: {
    readonly accountId: string
    readonly pack: Pack
    readonly rail: string
    readonly periods: number
    readonly periodEnd: number
  }) => Effect.Effect<void, SqlError>
  /** An automatic top-up's off-session PaymentIntent succeeded, or failed. */
  readonly topupPaid: (topupId: string, paymentRef: string) => Effect.Effect<boolean, SqlError>
  readonly topupFailed: (topupId: string, message: string) => Effect.Effect<boolean, SqlError>
}) => {
  const { sql } = deps

  const rememberCustomer = (accountId: string | undefined, customer: string | undefined) =>
    accountId === undefined || customer === undefined
      ? Effect.void
      : Effect.asVoid(
          sql`INSERT INTO stripe_customers (account_id, customer_id) VALUES (${accountId}, ${customer})
            ON CONFLICT DO NOTHING`
        )

  /** A paid Checkout Session; a subscription's first payment is named by its first invoice. */
  const sessionPaid = (session: Stripe.Checkout.Session) =>
    Effect.gen(function* () {
      const checkoutId = session.client_reference_id ?? session.metadata?.checkout_id
      if (checkoutId === undefined || checkoutId === null) return
      if (session.payment_status === "unpaid") return // an async payment: its own event follows
      const invoice = idOf(session.invoice)
      const accountId = yield* deps.complete(
        checkoutId,
        session.mode === "subscription"
          ? {
              rail: "stripe",
              paymentRef: `stripe:${invoice ?? session.id}`,
              externalSubscriptionId: idOf(session.subscription)
            }
          : { rail: "stripe", paymentRef: `stripe:${session.id}` }
      )
      yield* rememberCustomer(accountId, idOf(session.customer))
    })

  /** One paid subscription period (the first one too, which may arrive before the checkout's event). */
  const invoicePaid = (invoice: Stripe.Invoice) =>
    Effect.gen(function* () {
      const { subscriptionId, checkoutId } = invoiceSubscription(invoice)
      if (subscriptionId === undefined) return
      const paymentRef = `stripe:${invoice.id}`
      const periodEnd = invoicePeriodEnd(invoice)
      if (checkoutId !== undefined) {
        // Completes the checkout if its own event has not come yet; nothing if it has.
        const accountId = yield* deps.complete(checkoutId, {
          rail: "stripe",
          paymentRef,
          externalSubscriptionId: subscriptionId,
          periodEnd
        })
        yield* rememberCustomer(accountId, idOf(invoice.customer))
      }
      // Lock order as everywhere that pays: the account, then its subscription (a payment completing
      // at the same time takes them in that order too).
      const owners = yield* sql`SELECT id, account_id, pack, periods FROM subscriptions
        WHERE stripe_subscription_id = ${subscriptionId}`.pipe(Effect.flatMap(decodeSubscriptionRows))
      if (owners[0] !== undefined)
        yield* sql`SELECT id FROM accounts WHERE id = ${owners[0].account_id} FOR UPDATE`
      const rows = yield* sql`SELECT id, account_id, pack, periods FROM subscriptions
        WHERE stripe_subscription_id = ${subscriptionId} FOR UPDATE`.pipe(
        Effect.flatMap(decodeSubscriptionRows)
      )
      const subscription = rows[0]
      if (subscription === undefined) {
        yield* Effect.logWarning("stripe: invoice.paid for an unknown subscription", { invoice: invoice.id })
        return
      }
      const pack = deps.packs.find((candidate) => candidate.pack === subscription.pack)!
      const applied = yield* deps.applyPurchase({
        accountId: subscription.account_id,
        pack,
        rail: "stripe",
        paymentRef,
        periodEnd
      })
      if (applied) {
        yield* sql`UPDATE subscriptions SET periods = periods + 1,
            current_period_end = GREATEST(current_period_end, ${periodEnd})
          WHERE id = ${subscription.id}`
        yield* deps.renewed({
          accountId: subscription.account_id,
          pack,
          rail: "stripe",
          periods: subscription.periods + 1,
          periodEnd
        })
      } else if (subscription.periods === 1) {
        // The first invoice, credited by the checkout's event, which could only guess its period.
        yield* sql`UPDATE subscriptions SET current_period_end = ${periodEnd} WHERE id = ${subscription.id}`
      }
    })

  const apply = (event: Stripe.Event) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const fresh = yield* sql`INSERT INTO stripe_events (id, type, received_at)
          VALUES (${event.id}, ${event.type}, ${now}) ON CONFLICT (id) DO NOTHING RETURNING id`
        if (fresh.length === 0) return "duplicate" as const
        switch (event.type) {
          case "checkout.session.completed":
          case "checkout.session.async_payment_succeeded":
            yield* sessionPaid(event.data.object)
            break
          case "invoice.paid":
            yield* invoicePaid(event.data.object)
            break
          case "customer.subscription.updated":
            yield* sql`UPDATE subscriptions SET cancel_at_period_end = ${event.data.object.cancel_at_period_end}
              WHERE stripe_subscription_id = ${event.data.object.id} AND status = 'active'`
            break
          case "payment_intent.succeeded": {
            const intent = event.data.object
            const topupId = intent.metadata?.topup_id
            if (topupId !== undefined) yield* deps.topupPaid(topupId, `stripe:${intent.id}`)
            break
          }
          case "payment_intent.payment_failed": {
            const intent = event.data.object
            const topupId = intent.metadata?.topup_id
            if (topupId !== undefined)
              yield* deps.topupFailed(
                topupId,
                `the payment failed (${intent.last_payment_error?.message ?? intent.last_payment_error?.code ?? "declined"})`
              )
            break
          }
          case "customer.subscription.deleted":
            // The subscription ends: the credits already paid for stay, and the account goes from
            // production to flex (a paid account without a subscription).
            yield* deps.endSubscription(event.data.object.id)
            break
        }
        return "applied" as const
      })
    )

  return { apply }
}
