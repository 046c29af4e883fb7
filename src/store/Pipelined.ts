import { Context, Effect, Option } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The client for the hot paths' statements that stand alone: a batch of cache hits' charges
 * (`svc_charge_hits`) and `GET /v1/usage`'s read. On PostgreSQL a pool of its own whose connections
 * each carry up to 32 of them at once, pipelined (`@effect/sql-pg`'s `multiplex`), so they keep one
 * or two warm backends busy instead of waking up to ten in turn. It runs no transaction, so nothing
 * on it waits behind one: a statement pipelined on a connection a transaction holds would wait for
 * that transaction, and for any lock it waits on (`src/store/PgClient.ts`).
 */
export class Pipelined extends Context.Service<Pipelined, SqlClient.SqlClient>()("store/Pipelined") {}

/** The pipelined client where the store has one (PostgreSQL), else the store's own client (PGlite). */
export const pipelinedClient: Effect.Effect<SqlClient.SqlClient, never, SqlClient.SqlClient> = Effect.flatMap(
  Effect.serviceOption(Pipelined),
  (pipelined) =>
    Option.isSome(pipelined) ? Effect.succeed(pipelined.value) : Effect.service(SqlClient.SqlClient)
)
