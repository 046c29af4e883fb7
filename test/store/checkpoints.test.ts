import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { checkpointPast, walSinceCheckpoint } from "../../src/store/PgliteCheckpoints.ts"
import * as PgliteClient from "../../src/store/PgliteClient.ts"

/** PGlite's single-user PostgreSQL never checkpoints by itself; the store does it as its WAL grows. */
describe("PGlite checkpoints", () => {
  it.effect("checkpoint once the WAL written since the last one reaches the limit, and only then", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE written (v text)`
      yield* sql`INSERT INTO written SELECT repeat(md5(g::text), 8) FROM generate_series(1, 2000) AS g`
      const before = yield* walSinceCheckpoint
      assert.isAbove(before, 100_000)
      assert.isFalse(yield* checkpointPast(before * 2))
      assert.isAtLeast(yield* walSinceCheckpoint, before)
      assert.isTrue(yield* checkpointPast(before))
      assert.isBelow(yield* walSinceCheckpoint, 10_000)
      assert.deepStrictEqual(yield* sql`SELECT count(*)::int AS n FROM written`, [{ n: 2000 }])
    }).pipe(Effect.provide(Layer.orDie(PgliteClient.layer({ dataDir: ":memory:" }))))
  )

  it.effect("PGlite runs with 16 MB of shared buffers and keeps two WAL files", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const settings = yield* sql`SELECT name, current_setting(name) AS value FROM pg_settings
        WHERE name IN ('shared_buffers', 'min_wal_size') ORDER BY name`
      assert.deepStrictEqual(settings, [
        { name: "min_wal_size", value: "32MB" },
        { name: "shared_buffers", value: "16MB" }
      ])
    }).pipe(Effect.provide(Layer.orDie(PgliteClient.layer({ dataDir: ":memory:" }))))
  )
})
