import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Database from "../../src/store/Database.ts"
import * as PgClient from "../../src/store/PgClient.ts"

/** Set in CI (and by `npm test` when given) to run every database test on PostgreSQL too. */
export const postgresUrl = process.env.TEST_DATABASE_URL

export const storeName = postgresUrl === undefined ? "pglite" : "postgres"

/**
 * A fresh, migrated database for one test file: in-memory PGlite, or a new PostgreSQL database
 * created on the server of TEST_DATABASE_URL and dropped when the layer's scope ends.
 */
export const freshDatabase: Layer.Layer<SqlClient.SqlClient, unknown> =
  postgresUrl === undefined
    ? Database.pglite(":memory:")
    : Layer.unwrap(
        Effect.gen(function* () {
          const name = `svc_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
          const admin = (statement: string) =>
            Effect.gen(function* () {
              const sql = yield* SqlClient.SqlClient
              yield* sql.unsafe(statement)
            }).pipe(Effect.provide(PgClient.layer(postgresUrl)), Effect.scoped)
          yield* Effect.acquireRelease(admin(`CREATE DATABASE ${name}`), () =>
            Effect.ignore(admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
          )
          const url = new URL(postgresUrl)
          url.pathname = `/${name}`
          return Database.migrated(PgClient.layer(url.toString()))
        })
      )
