import { monitorEventLoopDelay } from "node:perf_hooks"
import { Effect, Option, Schema } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import * as Row from "../store/rows.ts"
import { Lifecycle } from "./Lifecycle.ts"
import { callsHeld, entry, gauge } from "./metrics.ts"

const Count = Schema.Struct({ n: Row.Int })
const decodeCount = Row.decoder(Count, "metrics count")
const Connections = Schema.Struct({ state: Schema.String, n: Row.Int })
const decodeConnections = Row.decoder(Connections, "pg_stat_activity")

const reservationsOpen = gauge(
  "svc_reservations_open",
  "Metered calls holding a reservation (every instance), from the store"
)
const heldHere = gauge(
  "svc_metered_calls_held",
  "Metered calls of this instance holding an Idempotency-Key claim and a reservation"
)
const outboxBacklog = gauge("svc_mail_outbox_backlog", "Mail messages not yet sent")
const webhookBacklog = gauge("svc_webhook_backlog", "Webhook deliveries pending (due or retrying)")
const rss = gauge("svc_process_resident_memory_bytes", "Resident memory of the process")
const heap = gauge("svc_process_heap_used_bytes", "V8 heap in use")
const loopDelay = (quantile: string) =>
  gauge(
    "svc_event_loop_delay_seconds",
    "Event-loop delay since the previous scrape, at a quantile (max: the largest)",
    { quantile }
  )
const loopP50 = loopDelay("0.5")
const loopP99 = loopDelay("0.99")
const loopMax = loopDelay("max")
const draining = gauge("svc_draining", "1 while the instance drains after SIGTERM (readyz answers 503)")
const connections = (state: string) =>
  gauge("svc_db_connections", "PostgreSQL connections to this database (every instance), by state", {
    state
  })
const connectionGauges = new Map<string, (value: number) => void>()

/**
 * The whole metrics page: what is read rather than counted (store backlogs, PostgreSQL
 * connections, memory, event-loop delay) is set now, then every metric is formatted. A store
 * that does not answer leaves its gauges at their last value.
 */
export const makeScrape = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const config = yield* AppConfig
  const lifecycle = yield* Lifecycle
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  yield* Effect.addFinalizer(() => Effect.sync(() => loop.disable()))
  const count = (query: Effect.Effect<ReadonlyArray<unknown>, unknown>, set: (value: number) => void) =>
    query.pipe(
      Effect.flatMap(decodeCount),
      Effect.map((rows) => set(rows[0]?.n ?? 0)),
      Effect.catchCause((cause) => Effect.logDebug("metrics: a store gauge could not be read", cause))
    )
  const pool = Option.isNone(config.databaseUrl)
    ? Effect.void
    : sql`SELECT coalesce(state, 'unknown') AS state, count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() GROUP BY 1`.pipe(
        Effect.flatMap(decodeConnections),
        Effect.flatMap((rows) => {
          for (const set of connectionGauges.values()) set(0)
          for (const row of rows) {
            entry(connectionGauges, row.state, () => connections(row.state))(row.n)
          }
          return Effect.void
        }),
        Effect.catchCause((cause) => Effect.logDebug("metrics: pg_stat_activity could not be read", cause))
      )
  return Effect.gen(function* () {
    yield* Effect.all(
      [
        count(sql`SELECT count(*)::int AS n FROM calls WHERE state = 'reserved'`, reservationsOpen),
        count(sql`SELECT count(*)::int AS n FROM outbox WHERE sent_at IS NULL`, outboxBacklog),
        count(sql`SELECT count(*)::int AS n FROM webhook_deliveries WHERE state = 'pending'`, webhookBacklog),
        pool
      ],
      { discard: true }
    )
    const memory = process.memoryUsage()
    rss(memory.rss)
    heap(memory.heapUsed)
    heldHere(callsHeld.count)
    draining(lifecycle.draining() ? 1 : 0)
    if (loop.count > 0) {
      loopP50(loop.percentile(50) / 1e9)
      loopP99(loop.percentile(99) / 1e9)
      loopMax(loop.max / 1e9)
    }
    loop.reset()
    return yield* PrometheusMetrics.format()
  })
})
