import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import { InvalidInput, NotFound, RateLimited, UpstreamUnavailable } from "../contract/errors.ts"
import type { Pack } from "../domain/plans.ts"
import { hashSecret } from "../domain/secrets.ts"
import { linkTokenPattern, makeLinkToken } from "../domain/signIn.ts"
import { Audit } from "../services/Audit.ts"
import { Credits } from "../services/Credits.ts"
import { Ids } from "../services/Ids.ts"
import { KeyMemory } from "../services/KeyMemory.ts"
import { Keys } from "../services/Keys.ts"
import { RateLimits } from "../services/RateLimits.ts"
import { WebhookEvents } from "../services/WebhookEvents.ts"
import * as Row from "../store/rows.ts"
import { PaymentRails } from "./PaymentRail.ts"

const hour = 3_600_000
/** An open checkout can be paid for 24 hours (as a Stripe Checkout Session). */
export const checkoutTtlMs = 24 * hour
/** One subscription period of the local rail. */
export const localPeriodMs = 30 * 24 * hour
/** A local billing-portal link works for one hour. */
export const portalTtlMs = hour

/**
 * What started a checkout (the session's `origin`): a program through `POST /v1/checkout` without a
 * bearer (`agent`), a person on the `/upgrade` page (`page`, keyless or naming an account), a spend
 * key, or a management token (the API's, or the dashboard's sign-in).
 */
export type CheckoutOrigin = "agent" | "page" | "spend_key" | "management"

/**
 * Who starts a checkout, as the entrances know it. With a credential it is counted per account;
 * without one (`agent`, `page`) per client IP (`Bearers.clientIp`: an IPv6 client by its network).
 */
export type CheckoutStarter =
  | { readonly origin: "spend_key" | "management"; readonly accountId: string }
  | { readonly origin: "agent"; readonly clientIp: string }
  | { readonly origin: "page"; readonly clientIp: string; readonly accountId: string | undefined }

/**
 * Who is shown a keyless checkout's new key, by what started the checkout: the program (its first
 * `GET /v1/checkout/{session_id}` after payment) or the person (the page after payment). A session
 * opened before origins were recorded (`null`) shows it to the first read of either.
 */
export const keyReaderOf = (origin: CheckoutOrigin | null): "api" | "page" | "first" =>
  origin === null ? "first" : origin === "agent" ? "api" : "page"

/** How the page after payment reaches the payer. */
export type AfterPayment =
  /** An existing account was credited; `origin` says what named it. */
  | { readonly _tag: "Credited"; readonly origin: CheckoutOrigin | null }
  /** A keyless checkout's new key, made for this view of the page: shown this once. */
  | { readonly _tag: "NewKey"; readonly key: string }
  /** The new key was shown before, to `reader`. */
  | { readonly _tag: "KeyShown"; readonly reader: "page" | "first" }
  /** The new key is the program's, which reads it through the API; the page never shows it. */
  | { readonly _tag: "KeyToProgram" }

/** What `POST /v1/checkout` answers. */
export interface CheckoutStarted {
  readonly session_id: string
  readonly checkout_url: string
  readonly rail: string
  readonly pack: Pack["pack"]
  readonly mode: Pack["mode"]
  readonly price_usd_cents: number
  readonly currency: "usd"
  readonly credits?: number
  readonly credits_per_month?: number
  readonly expires_at: string
}

/** What `GET /v1/checkout/{session_id}` answers. */
export interface CheckoutStatus {
  readonly session_id: string
  readonly status: "open" | "paid" | "expired"
  readonly pack: Pack["pack"]
  readonly rail: string
  readonly account_id?: string
  /** A keyless checkout's new key: in the first read after payment only. */
  readonly api_key?: string
}

/** A checkout session as the local pages show it. */
export interface CheckoutView {
  readonly id: string
  readonly status: "open" | "paid" | "expired"
  readonly pack: Pack
  readonly rail: string
  readonly accountId: string | null
  /** Null for a session opened before origins were recorded. */
  readonly origin: CheckoutOrigin | null
  readonly expiresAt: number
}

const SessionRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.NullOr(Schema.String),
  pack: Schema.Literals(["flex", "production"]),
  rail: Schema.String,
  status: Schema.Literals(["open", "paid", "expired"]),
  keyless: Schema.Boolean,
  origin: Schema.NullOr(Schema.Literals(["agent", "page", "spend_key", "management"])),
  key_revealed_at: Row.NullableInt,
  expires_at: Row.Int
})
type SessionRow = typeof SessionRow.Type
const decodeSessions = Row.decoder(SessionRow, "checkout_sessions")
const decodeSubscriptions = Row.decoder(
  Schema.Struct({
    id: Schema.String,
    account_id: Schema.String,
    pack: Schema.Literals(["flex", "production"]),
    rail: Schema.String,
    cancel_at_period_end: Schema.Boolean,
    current_period_end: Row.Int,
    periods: Row.Int
  }),
  "subscriptions"
)
const decodeAccountIds = Row.decoder(Schema.Struct({ account_id: Schema.String }), "account id")
const decodeEnded = Row.decoder(
  Schema.Struct({ pack: Schema.String, current_period_end: Row.Int }),
  "subscriptions (ended)"
)

const sessionSelect = "id, account_id, pack, rail, status, keyless, origin, key_revealed_at, expires_at"

/** An open session past its time reads as expired (the row is left as it is). */
const statusAt = (row: SessionRow, now: number) =>
  row.status === "open" && row.expires_at <= now ? ("expired" as const) : row.status

/** A wait as a person reads it. */
const inAWhile = (seconds: number) =>
  seconds < 90 ? `${seconds} seconds` : `about ${Math.round(seconds / 60)} minutes`

const unknownSession = () =>
  new NotFound({
    message: "No open checkout has this session id (unknown or expired). Start one with POST /v1/checkout.",
    param: "session_id"
  })

/** How a payment was taken, as the rail reports it. */
export interface Payment {
  readonly rail: string
  /** The payment's name on its rail: applied once, however often it is reported. */
  readonly paymentRef: string
  /** Stripe's subscription id, for a subscription paid on Stripe. */
  readonly externalSubscriptionId?: string | undefined
  readonly periodEnd?: number | undefined
}

/**
 * Checkout: a session for a pack on a rail, paid once, crediting the account of the key that
 * started it (or a new account whose key is revealed once). Both rails end in `complete`.
 */
export class Checkout extends Context.Service<
  Checkout,
  {
    /**
     * Every entrance's way to a new checkout (`POST /v1/checkout`, `POST /upgrade`, the dashboard):
     * the pack and rail checked, then the creation limit of its starter taken (RATE_LIMITED past it,
     * nothing stored), then the session stored and begun on its rail.
     */
    readonly start: (input: {
      readonly pack: string
      readonly rail: string | undefined
      readonly starter: CheckoutStarter
    }) => Effect.Effect<CheckoutStarted, InvalidInput | RateLimited | UpstreamUnavailable | SqlError>
    /** The API's read; a keyless checkout started by a program gets its key from the first one after payment. */
    readonly status: (sessionId: string) => Effect.Effect<CheckoutStatus, NotFound | SqlError>
    readonly view: (sessionId: string) => Effect.Effect<CheckoutView, NotFound | SqlError>
    /**
     * What the page of a paid checkout tells its payer; a keyless checkout started on the page gets
     * its key from the first view after payment. Undefined for an unknown or unpaid session.
     */
    readonly afterPayment: (sessionId: string) => Effect.Effect<AfterPayment | undefined, SqlError>
    /** The local rail's pay button. Paying a paid session again changes nothing. */
    readonly payLocal: (sessionId: string) => Effect.Effect<CheckoutView, NotFound | SqlError>
    /**
     * The one crediting path of every rail, by the session's public id: marks it paid, makes the
     * keyless checkout's account and key, applies the payment once, starts the subscription.
     * Returns the account credited. Joins the caller's transaction.
     */
    readonly complete: (
      sessionPublicId: string,
      payment: Payment
    ) => Effect.Effect<string | undefined, SqlError>
    /** The operator's renewal of a local `production` subscription: one more paid period. */
    readonly renewLocal: (
      accountId: string
    ) => Effect.Effect<{ readonly renewed: boolean; readonly current_period_end: number | null }, SqlError>
    /** Stripe ended a subscription: canceled, and the account leaves `production` for `flex`. */
    readonly endStripeSubscription: (stripeSubscriptionId: string) => Effect.Effect<boolean, SqlError>
    /** A local billing-portal link for an account. */
    readonly portalLink: (accountId: string) => Effect.Effect<string, SqlError>
    /** The account of a live portal link. */
    readonly portalAccount: (token: string) => Effect.Effect<string | undefined, SqlError>
    /** Ends the account's subscription at the end of the paid period. */
    readonly cancelAtPeriodEnd: (accountId: string) => Effect.Effect<boolean, SqlError>
    /**
     * Housekeeping: deletes unpaid sessions past their expiry by the policy's retention (paid ones
     * are the purchase history and stay) and expired portal links; returns how many.
     */
    readonly sweepExpired: Effect.Effect<number, SqlError>
  }
>()("payments/Checkout") {
  static readonly layer = Layer.effect(
    Checkout,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const keyMemory = yield* KeyMemory
      const ids = yield* Ids
      const credits = yield* Credits
      const keys = yield* Keys
      const rails = yield* PaymentRails
      const limits = yield* RateLimits
      const events = yield* WebhookEvents
      const audit = yield* Audit
      const config = yield* AppConfig
      const { packs, checkoutsPerIpHour, checkoutsPerAccountHour, checkoutKeepMs, stripeCheckoutKeepMs } =
        config.policy

      const packNamed = (name: string) => packs.find((pack) => pack.pack === name)

      /**
       * The creation limit of a checkout's starter: per account with a credential, per client IP
       * without one (the audit made 20,522 keyless sessions from one IP in 90 seconds).
       */
      const admit = (starter: CheckoutStarter) => {
        const rule =
          "clientIp" in starter
            ? {
                key: `checkout-ip:${starter.clientIp}`,
                limit: checkoutsPerIpHour,
                who: "without a key from one address (an IPv6 client counts by its network), and this address has",
                instead: ", or start the checkout with a key of the account to credit"
              }
            : {
                key: `checkout-account:${starter.accountId}`,
                limit: checkoutsPerAccountHour,
                who: "for one account, and this account has",
                instead: ""
              }
        return Effect.flatMap(limits.take({ key: rule.key, limit: rule.limit, window: "1 hour" }), (taken) =>
          taken.allowed
            ? Effect.void
            : Effect.fail(
                new RateLimited({
                  message: `Too many checkouts: at most ${rule.limit} checkouts an hour ${rule.who} started them. Nothing was started or charged; pay a checkout already open, retry in ${inAWhile(taken.retryAfterSeconds)}${rule.instead}.`,
                  retry_after_seconds: taken.retryAfterSeconds
                })
              )
        )
      }

      const start = Effect.fn("Checkout.start")(function* (input: {
        readonly pack: string
        readonly rail: string | undefined
        readonly starter: CheckoutStarter
      }) {
        const pack = packNamed(input.pack)
        if (pack === undefined)
          return yield* new InvalidInput({
            message: `Unknown pack "${input.pack}"; the packs are ${packs.map((p) => p.pack).join(" and ")}.`,
            param: "pack"
          })
        const railName = input.rail ?? config.checkoutRails[0]
        const rail = railName === undefined ? undefined : rails.get(railName)
        if (railName === undefined || rail === undefined)
          return yield* new InvalidInput({
            message: `The rail "${railName}" is not offered here; this service takes ${config.checkoutRails.join(" and ")}.`,
            param: "rail"
          })
        const { starter } = input
        // Counted once the request is valid, and before anything is stored. A rail that then fails
        // has still stored a session and called the provider: the attempt counts.
        yield* admit(starter)
        const accountId = starter.origin === "agent" ? undefined : starter.accountId
        const now = yield* Clock.currentTimeMillis
        const id = yield* ids.newId("chk")
        const token = `cs_${makeLinkToken(yield* ids.secretBytes)}`
        const expiresAt = now + checkoutTtlMs
        yield* sql`INSERT INTO checkout_sessions (id, token_hash, account_id, pack, rail, status, keyless,
            origin, expires_at, created_at)
          VALUES (${id}, ${hashSecret(token)}, ${accountId ?? null}, ${pack.pack}, ${railName}, 'open',
            ${accountId === undefined}, ${starter.origin}, ${expiresAt}, ${now})`
        const begun = yield* rail.begin({ id, token, pack, accountId, expiresAt }).pipe(
          Effect.catchTag("RailUnavailable", (failure) =>
            Effect.andThen(
              sql`UPDATE checkout_sessions SET status = 'expired' WHERE id = ${id}`,
              Effect.fail(
                new UpstreamUnavailable({
                  message: `The ${failure.rail} payment rail did not answer (${failure.message}); nothing was charged. Retry in a minute.`,
                  retry_after_seconds: 60
                })
              )
            )
          )
        )
        if (begun.externalId !== undefined) {
          yield* sql`UPDATE checkout_sessions SET stripe_session_id = ${begun.externalId} WHERE id = ${id}`
        }
        return {
          session_id: token,
          checkout_url: begun.checkoutUrl,
          rail: railName,
          pack: pack.pack,
          mode: pack.mode,
          price_usd_cents: pack.price_usd_cents,
          currency: "usd" as const,
          ...(pack.credits === undefined ? {} : { credits: pack.credits }),
          ...(pack.credits_per_month === undefined ? {} : { credits_per_month: pack.credits_per_month }),
          expires_at: new Date(expiresAt).toISOString()
        } satisfies CheckoutStarted
      })

      const byToken = (token: string) =>
        Effect.gen(function* () {
          if (!/^cs_[0-9A-Za-z]{43}$/.test(token) || !linkTokenPattern.test(token.slice(3))) return undefined
          const rows = yield* sql`SELECT ${sql.literal(sessionSelect)} FROM checkout_sessions
            WHERE token_hash = ${hashSecret(token)}`.pipe(Effect.flatMap(decodeSessions))
          return rows[0]
        })

      const viewOf = (row: SessionRow, now: number): CheckoutView => ({
        id: row.id,
        status: statusAt(row, now),
        pack: packNamed(row.pack)!,
        rail: row.rail,
        accountId: row.account_id,
        origin: row.origin,
        expiresAt: row.expires_at
      })

      const view = Effect.fn("Checkout.view")(function* (token: string) {
        const row = yield* byToken(token)
        // An open session on a rail that is no longer offered cannot be paid, so it is not shown.
        if (row === undefined || (row.status === "open" && !rails.has(row.rail)))
          return yield* unknownSession()
        return viewOf(row, yield* Clock.currentTimeMillis)
      })

      /**
       * A paid keyless checkout's key, made by the first read of the reader its origin names (the
       * only answer that shows it): of two racing reads only one marks it revealed, and the secret
       * itself is never stored.
       */
      const reveal = (row: SessionRow, reader: "api" | "page", now: number) => {
        const readers = keyReaderOf(row.origin)
        const accountId = row.account_id
        if (
          row.status !== "paid" ||
          !row.keyless ||
          row.key_revealed_at !== null ||
          accountId === null ||
          (readers !== "first" && readers !== reader)
        )
          return Effect.succeed(undefined)
        return sql.withTransaction(
          Effect.gen(function* () {
            const marked = yield* sql`UPDATE checkout_sessions SET key_revealed_at = ${now}
              WHERE id = ${row.id} AND key_revealed_at IS NULL RETURNING id`
            if (marked.length === 0) return undefined
            const issued = yield* keys.issue({ accountId, plan: row.pack, label: "checkout" })
            yield* audit.record(accountId, "key.created", issued.key_id)
            return issued.key
          })
        )
      }

      const status = Effect.fn("Checkout.status")(function* (token: string) {
        const row = yield* byToken(token)
        if (row === undefined) return yield* unknownSession()
        const now = yield* Clock.currentTimeMillis
        const revealed = yield* reveal(row, "api", now)
        return {
          session_id: token,
          status: statusAt(row, now),
          pack: row.pack,
          rail: row.rail,
          ...(row.account_id === null ? {} : { account_id: row.account_id }),
          ...(revealed === undefined ? {} : { api_key: revealed })
        } satisfies CheckoutStatus
      })

      const afterPayment = Effect.fn("Checkout.afterPayment")(function* (token: string) {
        const row = yield* byToken(token)
        if (row === undefined || row.status !== "paid") return undefined
        if (!row.keyless) return { _tag: "Credited", origin: row.origin } satisfies AfterPayment
        const key = yield* reveal(row, "page", yield* Clock.currentTimeMillis)
        if (key !== undefined) return { _tag: "NewKey", key } satisfies AfterPayment
        const reader = keyReaderOf(row.origin)
        return (
          reader === "api" ? { _tag: "KeyToProgram" } : { _tag: "KeyShown", reader }
        ) satisfies AfterPayment
      })

      const complete = (sessionPublicId: string, payment: Payment) =>
        sql.withTransaction(
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            const rows = yield* sql`SELECT ${sql.literal(sessionSelect)} FROM checkout_sessions
              WHERE id = ${sessionPublicId} FOR UPDATE`.pipe(Effect.flatMap(decodeSessions))
            const session = rows[0]
            if (session === undefined) return undefined
            if (session.status === "paid") return session.account_id ?? undefined
            const pack = packNamed(session.pack)!
            let accountId = session.account_id
            if (accountId === null) {
              accountId = yield* ids.newId("acct")
              yield* sql`INSERT INTO accounts (id, plan, created_at) VALUES (${accountId}, 'trial', ${now})`
            }
            const periodEnd =
              pack.mode === "subscription" ? (payment.periodEnd ?? now + localPeriodMs) : undefined
            yield* credits.applyPurchase({
              accountId,
              pack,
              rail: payment.rail,
              paymentRef: payment.paymentRef,
              periodEnd
            })
            if (pack.mode === "subscription" && periodEnd !== undefined) {
              yield* sql`UPDATE subscriptions SET status = 'canceled' WHERE account_id = ${accountId} AND status = 'active'`
              const subscriptionId = yield* ids.newId("sub")
              yield* sql`INSERT INTO subscriptions (id, account_id, pack, rail, status, current_period_end,
                  stripe_subscription_id, created_at)
                VALUES (${subscriptionId}, ${accountId}, ${pack.pack}, ${payment.rail}, 'active', ${periodEnd},
                  ${payment.externalSubscriptionId ?? null}, ${now})`
            }
            yield* sql`UPDATE checkout_sessions SET status = 'paid', paid_at = ${now}, account_id = ${accountId}
              WHERE id = ${session.id}`
            return accountId
          })
        )

      const payLocal = Effect.fn("Checkout.payLocal")(function* (token: string) {
        const row = yield* byToken(token)
        const now = yield* Clock.currentTimeMillis
        // Only while the local rail is offered: a session opened on it before the operator took
        // it away (or on another rail) cannot be paid without money.
        if (
          row === undefined ||
          row.rail !== "local" ||
          !rails.has("local") ||
          statusAt(row, now) === "expired"
        )
          return yield* unknownSession()
        yield* complete(row.id, { rail: "local", paymentRef: `local:${row.id}` })
        return yield* view(token)
      })

      /**
       * A subscription ended: the credits paid for stay and the account goes from `production` to
       * `flex` (a paid account without a subscription: flex's rate limit). Inside the caller's
       * transaction, with the account locked.
       */
      const leaveProduction = (accountId: string) =>
        Effect.andThen(
          keyMemory.changing(accountId),
          sql`UPDATE accounts SET plan = 'flex' WHERE id = ${accountId} AND plan = 'production'
          AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE account_id = ${accountId} AND status = 'active')`
        )

      /** The `subscription.ended` event, in the transaction that ends it. */
      const subscriptionEnded = (
        accountId: string,
        subscription: { readonly pack: string; readonly current_period_end: number },
        rail: string
      ) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          yield* audit.record(accountId, "subscription.ended", subscription.pack)
          yield* events.emit(accountId, "subscription.ended", {
            pack: subscription.pack,
            rail,
            ended_at: new Date(now).toISOString(),
            paid_until: new Date(subscription.current_period_end).toISOString()
          })
        })

      const endStripeSubscription = Effect.fn("Checkout.endStripeSubscription")(function* (
        stripeSubscriptionId: string
      ) {
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const owners = yield* sql`SELECT account_id FROM subscriptions
              WHERE stripe_subscription_id = ${stripeSubscriptionId}`.pipe(Effect.flatMap(decodeAccountIds))
            const accountId = owners[0]?.account_id
            if (accountId === undefined) return false
            yield* sql`SELECT id FROM accounts WHERE id = ${accountId} FOR UPDATE`
            const ended = yield* sql`UPDATE subscriptions SET status = 'canceled'
              WHERE stripe_subscription_id = ${stripeSubscriptionId} AND status = 'active'
              RETURNING pack, current_period_end`.pipe(Effect.flatMap(decodeEnded))
            yield* leaveProduction(accountId)
            if (ended[0] !== undefined) yield* subscriptionEnded(accountId, ended[0], "stripe")
            return true
          })
        )
      })

      const renewLocal = Effect.fn("Checkout.renewLocal")(function* (accountId: string) {
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            // Lock order as everywhere that pays: the account, then its subscription.
            yield* sql`SELECT id FROM accounts WHERE id = ${accountId} FOR UPDATE`
            const rows =
              yield* sql`SELECT id, account_id, pack, rail, cancel_at_period_end, current_period_end, periods
              FROM subscriptions WHERE account_id = ${accountId} AND status = 'active' AND rail = 'local'
              FOR UPDATE`.pipe(Effect.flatMap(decodeSubscriptions))
            const subscription = rows[0]
            if (subscription === undefined) return { renewed: false, current_period_end: null }
            if (subscription.cancel_at_period_end) {
              yield* sql`UPDATE subscriptions SET status = 'canceled' WHERE id = ${subscription.id}`
              yield* leaveProduction(accountId)
              yield* subscriptionEnded(
                accountId,
                { pack: subscription.pack, current_period_end: subscription.current_period_end },
                "local"
              )
              return { renewed: false, current_period_end: subscription.current_period_end }
            }
            const periodEnd = Math.max(subscription.current_period_end, now) + localPeriodMs
            const period = subscription.periods + 1
            yield* credits.applyPurchase({
              accountId,
              pack: packNamed(subscription.pack)!,
              rail: "local",
              paymentRef: `local:${subscription.id}:${period}`,
              periodEnd
            })
            yield* sql`UPDATE subscriptions SET current_period_end = ${periodEnd}, periods = ${period}
              WHERE id = ${subscription.id}`
            yield* audit.record(accountId, "subscription.renewed", subscription.pack)
            yield* events.emit(accountId, "subscription.renewed", {
              pack: subscription.pack,
              rail: "local",
              periods: period,
              current_period_end: new Date(periodEnd).toISOString()
            })
            return { renewed: true, current_period_end: periodEnd }
          })
        )
      })

      const portalLink = Effect.fn("Checkout.portalLink")(function* (accountId: string) {
        const now = yield* Clock.currentTimeMillis
        const token = makeLinkToken(yield* ids.secretBytes)
        yield* sql`INSERT INTO portal_sessions (token_hash, account_id, expires_at, created_at)
          VALUES (${hashSecret(token)}, ${accountId}, ${now + portalTtlMs}, ${now})`
        return `${config.baseUrl}/portal?session=${token}`
      })

      const portalAccount = Effect.fn("Checkout.portalAccount")(function* (token: string) {
        if (!linkTokenPattern.test(token)) return undefined
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql`SELECT account_id FROM portal_sessions
          WHERE token_hash = ${hashSecret(token)} AND expires_at > ${now}`.pipe(
          Effect.flatMap(decodeAccountIds)
        )
        return rows[0]?.account_id
      })

      const cancelAtPeriodEnd = Effect.fn("Checkout.cancelAtPeriodEnd")(function* (accountId: string) {
        const rows = yield* sql`UPDATE subscriptions SET cancel_at_period_end = true
          WHERE account_id = ${accountId} AND status = 'active' RETURNING id`
        return rows.length > 0
      })

      const sweepExpired = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        // Any rail but local keeps the longer retention: its provider may report a late payment.
        const sessions = yield* sql`DELETE FROM checkout_sessions WHERE id IN (
            SELECT id FROM checkout_sessions
            WHERE status <> 'paid' AND expires_at <= ${now - checkoutKeepMs}
              AND (rail = 'local' OR expires_at <= ${now - stripeCheckoutKeepMs})
            LIMIT 1000)
          RETURNING id`
        const portals = yield* sql`DELETE FROM portal_sessions WHERE expires_at <= ${now - checkoutKeepMs}
          RETURNING account_id`
        return sessions.length + portals.length
      }).pipe(Effect.withSpan("Checkout.sweepExpired"))

      return Checkout.of({
        start,
        status,
        view,
        afterPayment,
        sweepExpired,
        payLocal,
        complete,
        renewLocal,
        endStripeSubscription,
        portalLink,
        portalAccount,
        cancelAtPeriodEnd
      })
    })
  )
}
