import { Clock, Context, Effect, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import { type WebhookEventType, webhookPayload } from "../domain/webhooks.ts"
import { Ids } from "./Ids.ts"

/**
 * Wakes this instance's delivery workers when an event is queued here; they look again at once, and
 * a moment later (once the event's transaction has committed) if it was not there yet.
 */
export class WebhookWake extends Context.Service<WebhookWake, Queue.Queue<void>>()("services/WebhookWake") {
  // Bound: one wake-up (sliding): a wake-up already waiting stands for any number of new ones.
  static readonly layer = Layer.effect(WebhookWake, Queue.sliding<void>(1))
}

/**
 * Webhook events, queued like mail: `emit` writes the event and one delivery per active endpoint of
 * the account subscribed to its type, in one statement, inside the caller's transaction; so the
 * event commits or rolls back with the change that caused it, and the delivery worker
 * (`Deliveries`) sends it later. An account without a subscribed endpoint stores nothing, and an
 * endpoint with WEBHOOK_MAX_PENDING (1,000) deliveries waiting is not given more: the newest are
 * dropped, the oldest kept (a test ping, rate limited, is always queued).
 */
export class WebhookEvents extends Context.Service<
  WebhookEvents,
  {
    /** Queues `type` for the account's subscribed endpoints; the event's id, or undefined when none is. */
    readonly emit: (
      accountId: string,
      type: WebhookEventType,
      data: Record<string, unknown>
    ) => Effect.Effect<string | undefined, SqlError>
    /** Queues a `ping` for one endpoint of the account (subscribed or not); the event's id. */
    readonly ping: (accountId: string, endpointId: string) => Effect.Effect<string, SqlError>
  }
>()("services/WebhookEvents") {
  static readonly layer = Layer.effect(
    WebhookEvents,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const ids = yield* Ids
      const wake = yield* WebhookWake
      const maxPending = (yield* AppConfig).policy.webhooks.maxPendingPerEndpoint

      const emit = Effect.fn("WebhookEvents.emit")(function* (
        accountId: string,
        type: WebhookEventType,
        data: Record<string, unknown>
      ) {
        const now = yield* Clock.currentTimeMillis
        const id = yield* ids.newId("msg")
        const payload = webhookPayload({ type, id, createdAt: now, accountId, data })
        // An endpoint with `maxPending` deliveries waiting gets no new one (the newest are dropped).
        const queued = yield* sql`WITH subscribed AS (
            SELECT e.id FROM webhook_endpoints e
            WHERE e.account_id = ${accountId} AND e.state = 'active'
              AND ${type} = ANY (string_to_array(e.events, ','))
              AND (SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries d
                WHERE d.endpoint_id = e.id AND d.state = 'pending' LIMIT ${maxPending}) waiting) < ${maxPending}
          ), event AS (
            INSERT INTO webhook_events (id, account_id, type, payload, created_at)
            SELECT ${id}, ${accountId}, ${type}, ${payload}, ${now} WHERE EXISTS (SELECT 1 FROM subscribed)
            RETURNING id
          )
          INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_attempt_at, created_at)
          SELECT event.id, subscribed.id, 'pending', ${now}, ${now} FROM event, subscribed
          RETURNING endpoint_id`
        if (queued.length === 0) return undefined
        yield* Queue.offer(wake, undefined)
        return id
      })

      const ping = Effect.fn("WebhookEvents.ping")(function* (accountId: string, endpointId: string) {
        const now = yield* Clock.currentTimeMillis
        const id = yield* ids.newId("msg")
        const payload = webhookPayload({
          type: "ping",
          id,
          createdAt: now,
          accountId,
          data: { webhook_id: endpointId }
        })
        yield* sql.withTransaction(
          Effect.andThen(
            sql`INSERT INTO webhook_events (id, account_id, type, payload, created_at)
              VALUES (${id}, ${accountId}, 'ping', ${payload}, ${now})`,
            sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_attempt_at, created_at)
              VALUES (${id}, ${endpointId}, 'pending', ${now}, ${now})`
          )
        )
        yield* Queue.offer(wake, undefined)
        return id
      })

      return WebhookEvents.of({ emit, ping })
    })
  )
}
