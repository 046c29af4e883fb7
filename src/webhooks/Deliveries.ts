import { Clock, Context, type Duration, Effect, Layer, Queue, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { Webhook } from "standardwebhooks"
import { AppConfig } from "../config.ts"
import { nextAttemptAt, retryDelayMs } from "../domain/webhooks.ts"
import { Ids } from "../services/Ids.ts"
import { webhookDisabledMail } from "../services/mail/messages.ts"
import { Outbox } from "../services/mail/Outbox.ts"
import { pollLoop } from "../services/polling.ts"
import { WebhookWake } from "../services/WebhookEvents.ts"
import * as Row from "../store/rows.ts"
import { WebhookResolver } from "./resolver.ts"
import { SecretBox } from "./SecretBox.ts"
import { WebhookTransport } from "./transport.ts"

const ClaimedEndpoint = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  url: Schema.String,
  secret_sealed: Schema.String
})
type ClaimedEndpoint = typeof ClaimedEndpoint.Type
const decodeClaimed = Row.decoder(ClaimedEndpoint, "webhook_endpoints (claimed)")

const DueDelivery = Schema.Struct({
  event_id: Schema.String,
  attempts: Row.Int,
  created_at: Row.Int,
  payload: Schema.String
})
type DueDelivery = typeof DueDelivery.Type
const decodeDue = Row.decoder(DueDelivery, "webhook_deliveries (due)")
const decodeHeld = Row.decoder(Schema.Struct({ failures: Row.Int }), "webhook_endpoints (held)")
const decodeFailing = Row.decoder(
  Schema.Struct({ failing_since: Row.Int, email: Schema.NullOr(Schema.String) }),
  "webhook_endpoints (failing)"
)

/** What one attempt came to. */
interface Attempt {
  readonly ok: boolean
  readonly status: number | null
  readonly body: string | null
  readonly error: string | null
  readonly durationMs: number
}

/** Deliveries sent to one endpoint per claim, at most (the others wait for the next claim). */
const perClaim = 20

/**
 * Sends the queued webhook deliveries. A worker first claims an endpoint with due deliveries by a
 * conditional UPDATE that sets its lease (`locked_until`, `lease_token`), as the mail outbox
 * claims a message: so across every instance an endpoint gets one request at a time, and no
 * attempt is made twice at once. Each attempt signs the event's stored body afresh (Standard
 * Webhooks: the same `webhook-id` every time, the attempt's own timestamp) and sends it through
 * `WebhookTransport` (`pinnedRequest` unless a test gives its own), which resolves the URL and
 * refuses a private address again (a DNS answer can change), follows no redirect, waits at most
 * the timeout (3 s to connect, 10 s in all) and reads a capped answer. A 2xx delivers; anything
 * else is retried (5 s doubling to 1 h, for 24 h), and the endpoint backs off as a whole: none of
 * its deliveries is tried before its own wait (5 s doubling to 1 h with its failures in a row) is
 * over. An account holds at most WEBHOOK_CONCURRENCY_PER_ACCOUNT (2) endpoints' leases at once,
 * and the account holding fewest is served first: one tenant's silent receivers hold at most that
 * many workers, never the others. An endpoint failing for 3 days is disabled and its owner emailed. An instance
 * that dies mid-delivery leaves the delivery pending: its lease lapses and another instance (or
 * this one, restarted) sends it again, with the same `webhook-id` (at least once).
 */
export class Deliveries extends Context.Service<
  Deliveries,
  {
    /** Delivers what is due now, endpoint by endpoint, until nothing is; how many were delivered. */
    readonly deliverDue: Effect.Effect<number, SqlError>
    /** Claims one endpoint with due deliveries and sends them; false when there was none. */
    readonly deliverNext: Effect.Effect<boolean, SqlError>
    /** Housekeeping: finished deliveries, their attempts and events past the retention; how many rows. */
    readonly sweep: Effect.Effect<number, SqlError>
  }
>()("webhooks/Deliveries") {
  /** The service without its workers (a test can make two over one database). */
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const box = yield* SecretBox
    const outbox = yield* Outbox
    const config = yield* AppConfig
    const resolve = yield* WebhookResolver
    const transport = yield* WebhookTransport
    const wake = yield* WebhookWake
    const limits = config.policy.webhooks
    const schedule = { firstMs: limits.retryFirstMs, maxMs: limits.retryMaxMs, forMs: limits.retryForMs }
    // Longer than an attempt may take (its timeout) plus its recording: no two holders overlap.
    const leaseMs = limits.timeoutMs + 30_000
    const allowPrivate = config.webhookAllowPrivateUrls

    /**
     * An endpoint with a due delivery, not leased and not backing off, of an account holding fewer
     * than `perAccount` leases; the account holding fewest first (round robin across accounts),
     * then the oldest due delivery. Two claims racing for one account's last place may each see it
     * free: the bound then holds to within one lease per racing worker.
     */
    const claim = (now: number, token: string) =>
      sql`UPDATE webhook_endpoints SET locked_until = ${now + leaseMs}, lease_token = ${token}
        WHERE id = (
          WITH held AS (
            SELECT account_id, COUNT(*) AS n FROM webhook_endpoints
            WHERE locked_until IS NOT NULL AND locked_until > ${now} GROUP BY account_id
          )
          SELECT e.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
            LEFT JOIN held h ON h.account_id = e.account_id
          WHERE d.state = 'pending' AND d.next_attempt_at <= ${now} AND e.state = 'active'
            AND (e.locked_until IS NULL OR e.locked_until <= ${now})
            AND (e.retry_at IS NULL OR e.retry_at <= ${now})
            AND COALESCE(h.n, 0) < ${limits.perAccount}
          ORDER BY COALESCE(h.n, 0), d.next_attempt_at LIMIT 1
          FOR UPDATE OF e SKIP LOCKED
        ) AND state = 'active' AND (locked_until IS NULL OR locked_until <= ${now})
        RETURNING id, account_id, url, secret_sealed`.pipe(
        Effect.flatMap(decodeClaimed),
        Effect.map((rows) => rows[0])
      )

    /** Our lease, extended for one more attempt; false once it is lost (or the endpoint left 'active'). */
    const renew = (endpointId: string, token: string, now: number) =>
      Effect.map(
        sql`UPDATE webhook_endpoints SET locked_until = ${now + leaseMs}
          WHERE id = ${endpointId} AND lease_token = ${token} AND state = 'active' RETURNING id`,
        (rows) => rows.length > 0
      )

    const release = (endpointId: string, token: string) =>
      sql`UPDATE webhook_endpoints SET locked_until = NULL, lease_token = NULL
        WHERE id = ${endpointId} AND lease_token = ${token}`

    const nextDue = (endpointId: string, now: number) =>
      sql`SELECT d.event_id, d.attempts, d.created_at, ev.payload
        FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id
        WHERE d.endpoint_id = ${endpointId} AND d.state = 'pending' AND d.next_attempt_at <= ${now}
        ORDER BY d.next_attempt_at, d.created_at LIMIT 1`.pipe(
        Effect.flatMap(decodeDue),
        Effect.map((rows) => rows[0])
      )

    /** One signed POST of the event's stored body. */
    const send = (endpoint: ClaimedEndpoint, due: DueDelivery) =>
      Effect.gen(function* () {
        const started = yield* Clock.currentTimeMillis
        const opened = yield* Effect.result(box.open(endpoint.secret_sealed, endpoint.id))
        const finished = (fields: Omit<Attempt, "durationMs">) =>
          Effect.map(Clock.currentTimeMillis, (now): Attempt => ({ ...fields, durationMs: now - started }))
        if (opened._tag === "Failure")
          return yield* finished({ ok: false, status: null, body: null, error: opened.failure.message })
        const timestamp = new Date(started)
        const signature = new Webhook(opened.success).sign(due.event_id, timestamp, due.payload)
        const answer = yield* Effect.result(
          transport(
            endpoint.url,
            {
              method: "POST",
              headers: {
                "content-type": "application/json",
                "user-agent": "svc-webhooks/1",
                "webhook-id": due.event_id,
                "webhook-timestamp": String(Math.floor(started / 1000)),
                "webhook-signature": signature
              },
              body: due.payload
            },
            {
              allowPrivate,
              allowHttp: allowPrivate,
              timeoutMs: limits.timeoutMs,
              connectTimeoutMs: limits.connectTimeoutMs,
              maxBytes: limits.responseMaxBytes,
              overflow: "truncate",
              resolve
            }
          )
        )
        if (answer._tag === "Failure")
          return yield* finished({ ok: false, status: null, body: null, error: answer.failure.message })
        const { status, body } = answer.success
        return yield* finished({
          ok: status >= 200 && status < 300,
          status,
          // Text as the receiver sent it, up to the cap; never a NUL (PostgreSQL text refuses it).
          body: body.toString("utf8").replaceAll("\u0000", ""),
          error: status >= 200 && status < 300 ? null : `answered ${status}`
        })
      })

    /** Disables a failing endpoint: nothing more is sent to it, and its owner is emailed. */
    const disable = (endpoint: ClaimedEndpoint, now: number, error: string, email: string | null) =>
      Effect.gen(function* () {
        const disabled = yield* sql`UPDATE webhook_endpoints
          SET state = 'disabled', disabled_at = ${now}, locked_until = NULL, lease_token = NULL
          WHERE id = ${endpoint.id} AND state = 'active' RETURNING id`
        if (disabled.length === 0) return
        yield* sql`UPDATE webhook_deliveries SET state = 'canceled'
          WHERE endpoint_id = ${endpoint.id} AND state = 'pending'`
        yield* Effect.logWarning(
          `webhooks: ${endpoint.id} disabled after failing for ${limits.disableAfterMs} ms`
        )
        if (email === null) return
        yield* outbox.enqueue(
          webhookDisabledMail({
            to: email,
            accountId: endpoint.account_id,
            webhookId: endpoint.id,
            url: endpoint.url,
            days: Math.round((limits.disableAfterMs / 86_400_000) * 10) / 10,
            lastError: error,
            dashboardUrl: `${config.baseUrl}/dashboard/webhooks?account=${encodeURIComponent(endpoint.account_id)}`
          })
        )
      })

    /**
     * The attempt, recorded; and while the lease is still ours, the delivery's new state (and the
     * endpoint's failing streak). One transaction.
     */
    const record = (endpoint: ClaimedEndpoint, token: string, due: DueDelivery, attempt: Attempt) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const attemptId = yield* ids.newId("wha")
          yield* sql`INSERT INTO webhook_attempts (id, event_id, endpoint_id, attempt, status, response_code,
              response_body, error, duration_ms, attempted_at)
            VALUES (${attemptId}, ${due.event_id}, ${endpoint.id}, ${due.attempts + 1},
              ${attempt.ok ? "succeeded" : "failed"}, ${attempt.status}, ${attempt.body}, ${attempt.error},
              ${attempt.durationMs}, ${now - attempt.durationMs})`
          const [held] = yield* sql`SELECT failures FROM webhook_endpoints
            WHERE id = ${endpoint.id} AND lease_token = ${token} FOR UPDATE`.pipe(Effect.flatMap(decodeHeld))
          if (held === undefined) return
          if (attempt.ok) {
            yield* sql`UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, delivered_at = ${now}
              WHERE event_id = ${due.event_id} AND endpoint_id = ${endpoint.id} AND state = 'pending'`
            yield* sql`UPDATE webhook_endpoints SET failing_since = NULL, failures = 0, retry_at = NULL
              WHERE id = ${endpoint.id}`
            return
          }
          // The endpoint backs off as a whole: none of its deliveries is tried before `retry_at`.
          const failures = held.failures + 1
          yield* sql`UPDATE webhook_endpoints SET failures = ${failures},
              retry_at = ${now + retryDelayMs(schedule, failures)}
            WHERE id = ${endpoint.id}`
          const next = nextAttemptAt(schedule, due.attempts + 1, now, due.created_at)
          yield* sql`UPDATE webhook_deliveries SET attempts = attempts + 1,
              state = ${next === undefined ? "failed" : "pending"}, next_attempt_at = ${next ?? now}
            WHERE event_id = ${due.event_id} AND endpoint_id = ${endpoint.id} AND state = 'pending'`
          const [failing] =
            yield* sql`UPDATE webhook_endpoints e SET failing_since = COALESCE(e.failing_since, ${now})
            FROM accounts a WHERE e.id = ${endpoint.id} AND a.id = e.account_id
            RETURNING e.failing_since, a.email`.pipe(Effect.flatMap(decodeFailing))
          if (failing !== undefined && now - failing.failing_since >= limits.disableAfterMs)
            yield* disable(endpoint, now, attempt.error ?? "failed", failing.email)
        })
      )

    /**
     * Sends an endpoint's due deliveries one at a time, while the lease is ours; stops at a failure,
     * after `perClaim` deliveries, or once the claim has lasted `timeoutMs` (a slow but answering
     * receiver then gives its worker back, and waits its turn behind the other accounts).
     */
    const deliverEndpoint = (endpoint: ClaimedEndpoint, token: string) =>
      Effect.gen(function* () {
        let delivered = 0
        const claimedAt = yield* Clock.currentTimeMillis
        for (let n = 0; n < perClaim; n++) {
          const now = yield* Clock.currentTimeMillis
          if (n > 0 && now - claimedAt >= limits.timeoutMs) break
          if (!(yield* renew(endpoint.id, token, now))) break
          const due = yield* nextDue(endpoint.id, now)
          if (due === undefined) break
          const attempt = yield* send(endpoint, due)
          // A delivered attempt left unrecorded would be sent again after the lease: worth a few tries.
          yield* record(endpoint, token, due, attempt).pipe(
            Effect.retry({ times: attempt.ok ? 5 : 1, schedule: Schedule.exponential("100 millis") })
          )
          if (!attempt.ok) {
            yield* Effect.logWarning("webhooks: delivery failed; will retry").pipe(
              Effect.annotateLogs({ webhook: endpoint.id, event: due.event_id, error: attempt.error })
            )
            break
          }
          delivered++
        }
        return delivered
      }).pipe(Effect.ensuring(Effect.ignore(release(endpoint.id, token))))

    const deliverNextCounting = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const token = yield* ids.newId("lease")
      const endpoint = yield* claim(now, token)
      if (endpoint === undefined) return undefined
      // Another endpoint may be due too: wake a worker for it while this one is delivered.
      yield* Queue.offer(wake, undefined)
      return yield* deliverEndpoint(endpoint, token)
    })

    const deliverNext = Effect.map(deliverNextCounting, (delivered) => delivered !== undefined).pipe(
      Effect.withSpan("Deliveries.deliverNext")
    )

    const deliverDue = Effect.gen(function* () {
      let delivered = 0
      for (;;) {
        const count = yield* deliverNextCounting
        if (count === undefined) return delivered
        delivered += count
      }
    }).pipe(Effect.withSpan("Deliveries.deliverDue"))

    const sweep = Effect.gen(function* () {
      const before = (yield* Clock.currentTimeMillis) - limits.keepMs
      const attempts = yield* sql`DELETE FROM webhook_attempts WHERE id IN (
          SELECT id FROM webhook_attempts WHERE attempted_at < ${before} LIMIT 1000) RETURNING id`
      const deliveries = yield* sql`DELETE FROM webhook_deliveries d WHERE d.state <> 'pending'
          AND d.created_at < ${before}
          AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.event_id = d.event_id AND a.endpoint_id = d.endpoint_id)
        RETURNING event_id`
      const events = yield* sql`DELETE FROM webhook_events ev WHERE ev.created_at < ${before}
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = ev.id)
          AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.event_id = ev.id)
        RETURNING id`
      return attempts.length + deliveries.length + events.length
    }).pipe(Effect.withSpan("Deliveries.sweep"))

    return Deliveries.of({ deliverDue, deliverNext, sweep })
  })

  /**
   * The service and its workers: `concurrency` fibers (WEBHOOK_CONCURRENCY), each claiming one
   * endpoint at a time; a slow receiver holds one fiber for at most its timeout per attempt, never
   * the others. When nothing is due, one of them looks again after `pollEvery` (1 s), doubling up to
   * `idleMax` (5 s, the first retry's wait) while the instance stays idle, and the others wait: an
   * event queued on this instance wakes one, and a worker that claims an endpoint wakes the next.
   */
  static readonly layerWith = (
    options: { readonly pollEvery?: Duration.Input; readonly idleMax?: Duration.Input } = {}
  ) =>
    Layer.effect(
      Deliveries,
      Effect.gen(function* () {
        const deliveries = yield* Deliveries.make
        const config = yield* AppConfig
        const { concurrency } = config.policy.webhooks
        if (config.webhookAllowPrivateUrls)
          yield* Effect.logWarning(
            "WEBHOOK_ALLOW_PRIVATE_URLS is on: webhooks may be http:// and reach loopback and private addresses (this machine, its network). Only for tests and a self-hosted network."
          )
        const wake = yield* WebhookWake
        const step = deliveries.deliverNext.pipe(
          Effect.catchCause((cause) =>
            Effect.as(Effect.logWarning("webhooks: the deliveries could not be read", cause), false)
          )
        )
        for (let n = 0; n < concurrency; n++) {
          yield* Effect.forkScoped(
            pollLoop({
              step,
              wake,
              first: options.pollEvery ?? "1 second",
              max: n === 0 ? (options.idleMax ?? "5 seconds") : undefined
            })
          )
        }
        return deliveries
      })
    )

  static readonly layer = Deliveries.layerWith()
}
