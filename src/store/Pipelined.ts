import { Context, Effect, Option } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The client for `GET /v1/usage`'s read, a hot path's statement that stands alone and commits
 * nothing. On PostgreSQL a pool of its own whose connections each carry up to 32 of them at once,
 * pipelined (`@effect/sql-pg`'s `multiplex`), so they keep one or two warm backends busy instead of
 * waking up to ten in turn. It runs no transaction, so nothing on it waits behind one: a statement
 * pipelined on a connection a transaction holds would wait for that transaction, and for any lock it
 * waits on (`src/store/PgClient.ts`).
 */
export class Pipelined extends Context.Service<Pipelined, SqlClient.SqlClient>()("store/Pipelined") {}

/**
 * The client for the cache hits' charges (`svc_charge_hits`, `src/metering/HitCharges.ts`). On
 * PostgreSQL a pool of its own with one connection for each of HitCharges' workers and one statement
 * a connection: each statement commits, and statements pipelined on one connection commit one after
 * another (each waits for the WAL flush of the one before), where statements on connections of
 * their own commit side by side and PostgreSQL flushes their WAL together. Like `Pipelined`, it runs
 * no transaction and nothing else, so a charge never waits for a connection a transaction holds.
 */
export class Charging extends Context.Service<Charging, SqlClient.SqlClient>()("store/Charging") {}

/** The charging pool's connections: HitCharges runs as many workers on PostgreSQL, one statement each. */
export const chargingConnections = 4

const ownPoolOr = <S>(service: Context.Key<S, SqlClient.SqlClient>) =>
  Effect.flatMap(Effect.serviceOption(service), (client) =>
    Option.isSome(client) ? Effect.succeed(client.value) : Effect.service(SqlClient.SqlClient)
  )

/** The pipelined client where the store has one (PostgreSQL), else the store's own client (PGlite). */
export const pipelinedClient: Effect.Effect<SqlClient.SqlClient, never, SqlClient.SqlClient> =
  ownPoolOr(Pipelined)

/** The charging client where the store has one (PostgreSQL), else the store's own client (PGlite). */
export const chargingClient: Effect.Effect<SqlClient.SqlClient, never, SqlClient.SqlClient> =
  ownPoolOr(Charging)
