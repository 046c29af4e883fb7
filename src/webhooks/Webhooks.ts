import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import { InvalidInput, NotFound, type RateLimited } from "../contract/errors.ts"
import {
  isWebhookEventType,
  makeWebhookSecret,
  type WebhookEventType,
  webhookUrlRefusal
} from "../domain/webhooks.ts"
import { checkedAddresses } from "../oauth/clientFetch.ts"
import { Audit } from "../services/Audit.ts"
import { Ids } from "../services/Ids.ts"
import { RateLimits } from "../services/RateLimits.ts"
import { WebhookEvents } from "../services/WebhookEvents.ts"
import * as Row from "../store/rows.ts"
import { WebhookResolver } from "./resolver.ts"
import { SecretBox } from "./SecretBox.ts"

/** An endpoint as its owner sees it (never its secret, which only its creation shows). */
export interface WebhookListing {
  readonly webhook_id: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly state: "active" | "disabled"
  readonly created_at: string
  /** The first failed attempt since the last success; null while deliveries succeed. */
  readonly failing_since: string | null
  readonly disabled_at: string | null
  /** Deliveries waiting to be sent (or retried). */
  readonly pending: number
}

export interface WebhookCreated {
  readonly webhook_id: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly secret: string
  readonly created_at: string
}

export interface WebhookAttempt {
  readonly event_id: string
  readonly type: string
  readonly attempt: number
  readonly status: "succeeded" | "failed"
  readonly attempted_at: string
  readonly response_code: number | null
  readonly response_body: string | null
  readonly error: string | null
  readonly duration_ms: number
}

export interface WebhookPending {
  readonly event_id: string
  readonly type: string
  readonly attempts: number
  readonly next_attempt_at: string
}

export interface WebhookDeliveries {
  readonly webhook_id: string
  readonly attempts: ReadonlyArray<WebhookAttempt>
  readonly pending: ReadonlyArray<WebhookPending>
}

const EndpointRow = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  events: Schema.String,
  state: Schema.Literals(["active", "disabled", "deleted"]),
  created_at: Row.Int,
  failing_since: Row.NullableInt,
  disabled_at: Row.NullableInt,
  pending: Row.Int
})
const decodeEndpoints = Row.decoder(EndpointRow, "webhook_endpoints")
const decodeAttempts = Row.decoder(
  Schema.Struct({
    event_id: Schema.String,
    type: Schema.String,
    attempt: Row.Int,
    status: Schema.Literals(["succeeded", "failed"]),
    attempted_at: Row.Int,
    response_code: Row.NullableInt,
    response_body: Schema.NullOr(Schema.String),
    error: Schema.NullOr(Schema.String),
    duration_ms: Row.Int
  }),
  "webhook_attempts"
)
const decodePending = Row.decoder(
  Schema.Struct({
    event_id: Schema.String,
    type: Schema.String,
    attempts: Row.Int,
    next_attempt_at: Row.Int
  }),
  "webhook_deliveries (pending)"
)
const decodeCount = Row.decoder(Schema.Struct({ n: Row.Int }), "webhook_endpoints (count)")

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

const listing = (row: typeof EndpointRow.Type): WebhookListing => ({
  webhook_id: row.id,
  url: row.url,
  events: row.events.split(","),
  state: row.state === "disabled" ? "disabled" : "active",
  created_at: new Date(row.created_at).toISOString(),
  failing_since: iso(row.failing_since),
  disabled_at: iso(row.disabled_at),
  pending: row.pending
})

const unknownWebhook = (webhookId: string) =>
  new NotFound({
    message: `No webhook ${webhookId.slice(0, 64)} on this account. List them with GET /v1/webhooks.`,
    param: "webhook_id"
  })

/** The events a subscription names, checked: known, not `ping` (sent by a test only), at least one. */
const subscription = (events: ReadonlyArray<string>) => {
  const subscribable = ["balance.low", "credits.purchased", "key.cap_reached", "key.created", "key.revoked"]
    .concat(["subscription.renewed", "subscription.ended", "topup.succeeded", "topup.failed"])
    .join(", ")
  const unknown = events.filter((event) => !isWebhookEventType(event) || event === "ping")
  if (unknown.length > 0)
    return new InvalidInput({
      message: `Unknown event ${JSON.stringify(unknown[0]).slice(0, 80)}; the events are ${subscribable} (ping is sent by POST /v1/webhooks/test to any endpoint).`,
      param: "events"
    })
  if (events.length === 0)
    return new InvalidInput({
      message: `Name at least one event to send; the events are ${subscribable}.`,
      param: "events"
    })
  return [...new Set(events)] as ReadonlyArray<WebhookEventType>
}

/**
 * An account's webhook endpoints: created with a URL that is checked now (https, resolving only to
 * public addresses) and again at every delivery, and a signing secret shown once and kept sealed
 * (`SecretBox`); listed, deleted, tested with a `ping`, and their delivery attempts read back.
 */
export class Webhooks extends Context.Service<
  Webhooks,
  {
    readonly create: (
      accountId: string,
      input: { readonly url: string; readonly events: ReadonlyArray<string> }
    ) => Effect.Effect<WebhookCreated, InvalidInput | SqlError>
    readonly list: (accountId: string) => Effect.Effect<ReadonlyArray<WebhookListing>, SqlError>
    readonly remove: (
      accountId: string,
      webhookId: string
    ) => Effect.Effect<{ readonly webhook_id: string; readonly deleted_at: string }, NotFound | SqlError>
    /**
     * Queues a `ping`; a disabled endpoint is enabled again by its test, and one backing off is
     * tried at once. At most the policy's tests per account and window, and per endpoint and window
     * (each makes the service send a request): RATE_LIMITED past either.
     */
    readonly test: (
      accountId: string,
      webhookId: string
    ) => Effect.Effect<
      { readonly webhook_id: string; readonly event_id: string; readonly type: "ping" },
      NotFound | RateLimited | SqlError
    >
    readonly deliveries: (
      accountId: string,
      webhookId: string,
      limit: number
    ) => Effect.Effect<WebhookDeliveries, NotFound | SqlError>
  }
>()("webhooks/Webhooks") {
  static readonly layer = Layer.effect(
    Webhooks,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const ids = yield* Ids
      const box = yield* SecretBox
      const events = yield* WebhookEvents
      const audit = yield* Audit
      const config = yield* AppConfig
      const resolve = yield* WebhookResolver
      const limits = yield* RateLimits
      const allowPrivate = config.webhookAllowPrivateUrls
      const { maxEndpointsPerAccount, tests, testsPerEndpoint } = config.policy.webhooks

      const create = Effect.fn("Webhooks.create")(function* (
        accountId: string,
        input: { readonly url: string; readonly events: ReadonlyArray<string> }
      ) {
        const subscribed = subscription(input.events)
        if (subscribed instanceof InvalidInput) return yield* subscribed
        const url = input.url.trim()
        const refusal = webhookUrlRefusal(url, allowPrivate)
        if (refusal !== undefined) return yield* new InvalidInput({ message: refusal, param: "url" })
        yield* checkedAddresses(new URL(url), { allowPrivate, resolve }).pipe(
          Effect.mapError(
            (error) =>
              new InvalidInput({
                message: `${error.message}: webhooks are sent only to public addresses, checked now and at every delivery.`,
                param: "url"
              })
          )
        )
        const now = yield* Clock.currentTimeMillis
        const id = yield* ids.newId("wh")
        const secret = makeWebhookSecret(yield* ids.secretBytes)
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            // The account's row orders two creations at the last free place.
            yield* sql`SELECT id FROM accounts WHERE id = ${accountId} FOR UPDATE`
            const [count] = yield* sql`SELECT COUNT(*) AS n FROM webhook_endpoints
                WHERE account_id = ${accountId} AND state <> 'deleted'`.pipe(Effect.flatMap(decodeCount))
            if ((count?.n ?? 0) >= maxEndpointsPerAccount)
              return yield* new InvalidInput({
                message: `This account has ${maxEndpointsPerAccount} webhooks, the most it may have. Delete one it no longer needs (POST /v1/webhooks/delete) first; one endpoint can take several events.`
              })
            yield* sql`INSERT INTO webhook_endpoints (id, account_id, url, events, secret_sealed, state, created_at)
                VALUES (${id}, ${accountId}, ${url}, ${subscribed.join(",")}, ${box.seal(secret, id)}, 'active', ${now})`
            yield* audit.record(accountId, "webhook.created", id)
            return {
              webhook_id: id,
              url,
              events: subscribed,
              secret,
              created_at: new Date(now).toISOString()
            } satisfies WebhookCreated
          })
        )
      })

      const endpointRows = (accountId: string, webhookId: string | null) =>
        sql`SELECT e.id, e.url, e.events, e.state, e.created_at, e.failing_since, e.disabled_at,
              (SELECT COUNT(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.state = 'pending') AS pending
            FROM webhook_endpoints e
            WHERE e.account_id = ${accountId} AND e.state <> 'deleted'
              AND (${webhookId}::text IS NULL OR e.id = ${webhookId})
            ORDER BY e.created_at, e.id`.pipe(Effect.flatMap(decodeEndpoints))

      const list = Effect.fn("Webhooks.list")(function* (accountId: string) {
        return (yield* endpointRows(accountId, null)).map(listing)
      })

      const remove = Effect.fn("Webhooks.remove")(function* (accountId: string, webhookId: string) {
        const now = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const removed = yield* sql`UPDATE webhook_endpoints SET state = 'deleted', deleted_at = ${now}
                WHERE id = ${webhookId} AND account_id = ${accountId} AND state <> 'deleted' RETURNING id`
            if (removed.length === 0) return yield* unknownWebhook(webhookId)
            yield* sql`UPDATE webhook_deliveries SET state = 'canceled'
                WHERE endpoint_id = ${webhookId} AND state = 'pending'`
            yield* audit.record(accountId, "webhook.deleted", webhookId)
            return { webhook_id: webhookId, deleted_at: new Date(now).toISOString() }
          })
        )
      })

      const test = Effect.fn("Webhooks.test")(function* (accountId: string, webhookId: string) {
        const [endpoint] = yield* endpointRows(accountId, webhookId)
        if (endpoint === undefined) return yield* unknownWebhook(webhookId)
        yield* limits.takeAll(
          [
            { key: `webhook-test:${accountId}`, rule: tests },
            { key: `webhook-test-endpoint:${webhookId}`, rule: testsPerEndpoint }
          ],
          "webhook test"
        )
        // The owner's test is tried at once: it ends the endpoint's back-off.
        const enabled = yield* sql`UPDATE webhook_endpoints
            SET state = 'active', disabled_at = NULL, failing_since = NULL, failures = 0, retry_at = NULL
            WHERE id = ${webhookId} AND account_id = ${accountId} AND state <> 'deleted' RETURNING id`
        if (enabled.length === 0) return yield* unknownWebhook(webhookId)
        const eventId = yield* events.ping(accountId, webhookId)
        return { webhook_id: webhookId, event_id: eventId, type: "ping" as const }
      })

      const deliveries = Effect.fn("Webhooks.deliveries")(function* (
        accountId: string,
        webhookId: string,
        limit: number
      ) {
        const [endpoint] = yield* endpointRows(accountId, webhookId)
        if (endpoint === undefined) return yield* unknownWebhook(webhookId)
        const attempts = yield* sql`SELECT a.event_id, ev.type, a.attempt, a.status, a.attempted_at,
              a.response_code, a.response_body, a.error, a.duration_ms
            FROM webhook_attempts a JOIN webhook_events ev ON ev.id = a.event_id
            WHERE a.endpoint_id = ${webhookId}
            ORDER BY a.attempted_at DESC, a.id DESC LIMIT ${limit}`.pipe(Effect.flatMap(decodeAttempts))
        const pending = yield* sql`SELECT d.event_id, ev.type, d.attempts, d.next_attempt_at
            FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id
            WHERE d.endpoint_id = ${webhookId} AND d.state = 'pending'
            ORDER BY d.next_attempt_at, d.created_at LIMIT ${limit}`.pipe(Effect.flatMap(decodePending))
        return {
          webhook_id: webhookId,
          attempts: attempts.map((row) => ({
            ...row,
            attempted_at: new Date(row.attempted_at).toISOString()
          })),
          pending: pending.map((row) => ({
            ...row,
            next_attempt_at: new Date(row.next_attempt_at).toISOString()
          }))
        } satisfies WebhookDeliveries
      })

      return Webhooks.of({ create, list, remove, test, deliveries })
    })
  )
}
