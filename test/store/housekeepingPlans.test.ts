import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import { IdempotencyStore } from "../../src/metering/IdempotencyStore.ts"
import { Reservations } from "../../src/metering/Reservations.ts"
import { ServicesLayer } from "../../src/service.ts"
import { freshDatabase, storeName } from "../support/database.ts"

/**
 * The housekeeping runs on a timer on every instance, over tables that grow with the ledger (a
 * receipt per call, an idempotency key per call that sent one, kept 8 days). Each of its statements
 * on those tables must find its rows through an index: a sequential scan would read the whole
 * ledger every minute (at 1,000,000 keys, 0.6-0.8 s each of the idempotency purge's two
 * statements on PostgreSQL, and as long a stall of PGlite's one thread).
 *
 * Run inside one transaction with sequential scans priced out of the planner's choice, so that the
 * test's near-empty tables do not make a scan the cheapest plan, and counted by the session's own
 * statistics (`pg_stat_xact_user_tables`, before and after: they may still hold an earlier
 * transaction's counts not yet flushed): a statement with no index to use still scans.
 */
const Services = ServicesLayer.pipe(
  Layer.provideMerge(freshDatabase),
  Layer.provideMerge(AppConfig.layerTest())
)

const seqScansDuring = <A, E, R>(work: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        const counts = sql<{ readonly relname: string; readonly seq_scan: number }>`
          SELECT relname, seq_scan::int AS seq_scan FROM pg_stat_xact_user_tables
          WHERE relname IN ('calls', 'idempotency_keys') ORDER BY relname`
        yield* sql`SET LOCAL enable_seqscan = off`
        const before = yield* counts
        yield* work
        const after = yield* counts
        return Object.fromEntries(
          after.map((row) => [
            row.relname,
            row.seq_scan - (before.find((earlier) => earlier.relname === row.relname)?.seq_scan ?? 0)
          ])
        )
      })
    )
  })

describe(`housekeeping reads the ledger through indexes (${storeName})`, () => {
  layer(Services, { timeout: 60_000 })((it) => {
    const jobs: ReadonlyArray<{
      readonly name: string
      readonly run: Effect.Effect<unknown, unknown, IdempotencyStore | Reservations>
    }> = [
      { name: "the idempotency purge", run: Effect.flatMap(IdempotencyStore, (store) => store.purgeExpired) },
      {
        name: "the sweep of dead reservations",
        run: Effect.flatMap(Reservations, (reservations) => reservations.sweepExpired)
      }
    ]
    for (const job of jobs) {
      it.effect(`${job.name} scans no table`, () =>
        Effect.gen(function* () {
          assert.deepStrictEqual(yield* seqScansDuring(job.run), { calls: 0, idempotency_keys: 0 })
        })
      )
    }

    it.effect("the count is real: a statement with no index to use is seen scanning", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const scans = yield* seqScansDuring(
          sql`SELECT count(*) FROM idempotency_keys WHERE fingerprint = 'x'`
        )
        assert.isAbove(scans.idempotency_keys ?? 0, 0)
      })
    )
  })
})
