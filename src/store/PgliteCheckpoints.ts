import { Clock, Effect, Layer, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Row from "./rows.ts"

/** WAL written since the last checkpoint past which the store checkpoints (two WAL files). */
const walLimitBytes = 32 * 1024 * 1024

const decodeWal = Row.decoder(Schema.Struct({ bytes: Row.Int }), "WAL since the last checkpoint")

/** WAL written since the last checkpoint, in bytes. */
export const walSinceCheckpoint = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn)::int8 AS bytes
    FROM pg_control_checkpoint()`.pipe(Effect.flatMap(decodeWal))
  return rows[0]?.bytes ?? 0
})

/** Checkpoints when at least `limitBytes` of WAL were written since the last checkpoint; whether it did. */
export const checkpointPast = (limitBytes: number) =>
  Effect.gen(function* () {
    if ((yield* walSinceCheckpoint) < limitBytes) return false
    yield* (yield* SqlClient.SqlClient)`CHECKPOINT`
    return true
  })

/**
 * PGlite runs PostgreSQL in single-user mode, where nothing checkpoints on its own: no
 * checkpointer process, and `max_wal_size` does not start one. So the write-ahead log only grows,
 * 16 MB file after file, until the store closes, in memory for a `:memory:` store. This does the
 * checkpointer's work: every few seconds it asks how much WAL was written since the last
 * checkpoint and, past `walLimitBytes`, checkpoints; PostgreSQL then removes or recycles the older
 * files (see `min_wal_size` in `PgliteClient.ts`). A checkpoint writes at most `shared_buffers`
 * of dirty pages and holds PGlite's one connection for some milliseconds. The loop keeps real
 * time, whatever clock the rest of the service runs on: under a test's virtual clock, days of
 * advanced time would otherwise run a check for every 5 s of them.
 */
export const layer: Layer.Layer<never, never, SqlClient.SqlClient> = Layer.effectDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* Effect.forkScoped(
      checkpointPast(walLimitBytes).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.catchCause((cause) => Effect.logWarning("PGlite checkpoint failed", cause)),
        Effect.repeat(Schedule.spaced("5 seconds")),
        Effect.provideService(Clock.Clock, Clock.Clock.defaultValue())
      )
    )
  })
)
