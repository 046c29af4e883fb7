import * as PgClientLib from "@effect/sql-pg/PgClient"
import { Context, Effect, Layer, Scope, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient, SqlError } from "effect/sql"
import type { Connection } from "effect/sql/SqlConnection"
import { TestClock } from "effect/testing"
import * as Database from "../../src/store/Database.ts"
import * as PgClient from "../../src/store/PgClient.ts"
import { PgliteClient } from "../../src/store/PgliteClient.ts"

/**
 * What the simulator can do to one instance's database connection: cut it for good (the instance
 * crashed: nothing it still runs reaches the store, not even its finalizers), or drop it once in
 * the middle of the next transaction (the statement `dropAt` statements after its BEGIN fails, as
 * when the connection breaks; the transaction rolls back).
 */
export interface Plug {
  dead: boolean
  /** Statements into the next transaction at which the connection drops; undefined: none armed. */
  dropAt: number | undefined
  /** Statements seen since the current transaction began; undefined outside a transaction. */
  inTransaction: number | undefined
  /** Connection drops that happened (for the trace). */
  drops: number
  /** A statement rewrite (a planted bug), applied to every statement this instance sends. */
  rewrite: ((sql: string) => string) | undefined
}

export const makePlug = (rewrite?: (sql: string) => string): Plug => ({
  dead: false,
  dropAt: undefined,
  inTransaction: undefined,
  drops: 0,
  rewrite
})

const lost = (operation: string) =>
  new SqlError.SqlError({
    reason: new SqlError.UnknownError({
      cause: new Error("connection lost (simulated)"),
      message: "connection lost (simulated)",
      operation
    })
  })

/** Decides, before each statement, whether the plug lets it through. */
const pass = (plug: Plug, sql: string): SqlError.SqlError | undefined => {
  if (plug.dead) return lost("execute")
  const head = sql.trimStart().slice(0, 8).toUpperCase()
  if (head.startsWith("BEGIN")) {
    plug.inTransaction = 0
    return undefined
  }
  if (head.startsWith("COMMIT") || head.startsWith("ROLLBACK")) {
    plug.inTransaction = undefined
    return undefined
  }
  if (plug.inTransaction !== undefined) {
    plug.inTransaction += 1
    if (plug.dropAt !== undefined && plug.inTransaction >= plug.dropAt) {
      plug.dropAt = undefined
      plug.drops += 1
      return lost("execute")
    }
  }
  return undefined
}

/**
 * On PostgreSQL the driver's own timeouts (connecting, a statement) run on the real clock: the
 * network does not wait for virtual time.
 */
const liveFor =
  (live: boolean) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    live ? TestClock.withLive(effect) : effect

const plugged = (plug: Plug, connection: Connection, live: boolean): Connection => {
  const onClock = liveFor(live)
  const guard = <A>(sql: string, run: (sql: string) => Effect.Effect<A, SqlError.SqlError>) =>
    Effect.suspend(() => {
      const failure = pass(plug, sql)
      if (failure !== undefined) return Effect.fail(failure)
      return onClock(run(plug.rewrite === undefined ? sql : plug.rewrite(sql)))
    })
  return {
    execute: (sql, params, transform) => guard(sql, (text) => connection.execute(text, params, transform)),
    executeRaw: (sql, params) => guard(sql, (text) => connection.executeRaw(text, params)),
    executeValues: (sql, params) => guard(sql, (text) => connection.executeValues(text, params)),
    executeValuesUnprepared: (sql, params) =>
      guard(sql, (text) => connection.executeValuesUnprepared(text, params)),
    executeUnprepared: (sql, params, transform) =>
      guard(sql, (text) => connection.executeUnprepared(text, params, transform)),
    executeStream: (sql, params, transform) => {
      const failure = pass(plug, sql)
      if (failure !== undefined) return Stream.fail(failure)
      return connection.executeStream(plug.rewrite === undefined ? sql : plug.rewrite(sql), params, transform)
    }
  }
}

/**
 * A SqlClient over the shared store whose every connection goes through `plug`: the seam the
 * simulator uses to crash an instance's connection or drop it mid-transaction. Connections are the
 * store's own (`reserve`: PGlite's one connection under its lock, a pooled one on PostgreSQL).
 */
export const pluggedClient = (base: SqlClient.SqlClient, plug: Plug, live = false) =>
  Effect.gen(function* () {
    const acquirer = Effect.map(liveFor(live)(base.reserve), (connection) => plugged(plug, connection, live))
    return yield* SqlClient.make({
      driver: base.driver ?? "pg",
      acquirer,
      transactionAcquirer: acquirer,
      compiler: PgClientLib.makeCompiler(),
      spanAttributes: []
    })
  }).pipe(Effect.provide(Reactivity.layer))

export interface Store {
  /** The store itself (for the checks and the setup), unplugged. */
  readonly context: Context.Context<SqlClient.SqlClient>
  /** The store's services for one instance, with its plug. */
  readonly forInstance: (plug: Plug) => Effect.Effect<Context.Context<SqlClient.SqlClient>>
}

/**
 * The shared, migrated store of a run: in-memory PGlite, or a fresh database on the PostgreSQL
 * server of `pgUrl` (dropped when the scope ends).
 */
export const openStore = (pgUrl: string | undefined, name: string) =>
  Effect.gen(function* () {
    const scope = yield* Scope.Scope
    if (pgUrl === undefined) {
      const context = yield* Layer.buildWithScope(Database.pglite(":memory:"), scope)
      const base = Context.get(context, SqlClient.SqlClient)
      const lite = Context.get(context, PgliteClient)
      return {
        context: Context.make(SqlClient.SqlClient, base),
        forInstance: (plug) =>
          Effect.map(pluggedClient(base, plug), (sql) =>
            Context.make(SqlClient.SqlClient, sql).pipe(Context.add(PgliteClient, lite))
          )
      } satisfies Store
    }
    const admin = (statement: string) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql.unsafe(statement)
      }).pipe(Effect.provide(PgClient.layer(pgUrl)), Effect.scoped)
    yield* Effect.acquireRelease(admin(`CREATE DATABASE ${name}`), () =>
      Effect.ignore(admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
    )
    const url = new URL(pgUrl)
    url.pathname = `/${name}`
    const context = yield* Layer.buildWithScope(Database.migrated(PgClient.layer(url.toString())), scope)
    const base = Context.get(context, SqlClient.SqlClient)
    return {
      context: Context.make(SqlClient.SqlClient, base),
      forInstance: (plug) =>
        Effect.map(pluggedClient(base, plug, true), (sql) => Context.make(SqlClient.SqlClient, sql))
    } satisfies Store
  })
