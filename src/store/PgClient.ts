/**
 * PostgreSQL `SqlClient` via `@effect/sql-pg`, configured to decode int8 (bigint, count(*)) as `number`
 * (or `bigint` beyond ±2^53), like `./PgliteClient.ts`, instead of sql-pg's default `bigint`.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as PgTypes from "@effect/sql-pg/PgTypes"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Reactivity from "effect/reactivity/Reactivity"
import type * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { Charging, chargingConnections, Pipelined } from "./Pipelined.ts"

const toNumberIfSafe = (value: bigint): number | bigint =>
  value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value

/** int8 decoded to a number when it is safe; encoding accepts numbers (integers) and bigints. */
const int8: PgTypes.Codec<number | bigint> = {
  encode: (value) =>
    PgTypes.encode(
      typeof value === "number" && Number.isInteger(value) ? BigInt(value) : value,
      PgTypes.OID.int8
    ),
  decode: (bytes) =>
    Result.map(PgTypes.decode(bytes, PgTypes.OID.int8, 1), (value) => toNumberIfSafe(value as bigint))
}

const makeTypes = (): PgTypes.Registry => {
  const types = PgTypes.makeRegistry()
  // int8[] decodes through the registry's element codec, so arrays follow.
  types.register(PgTypes.OID.int8, int8, { arrayOid: PgTypes.OID.int8Array })
  return types
}

/**
 * The pipelined pool's connections at most (`Pipelined`). The pool shares one connection among up
 * to 32 statements before it opens another, so under load it keeps one or two.
 */
const pipelinedConnections = 4

/** The name the pipelined pool's sessions give PostgreSQL (`pg_stat_activity.application_name`). */
export const pipelinedApplicationName = "svc-pipelined"

/** The name the charging pool's sessions give PostgreSQL. */
export const chargingApplicationName = "svc-charging"

/**
 * Pooled PostgreSQL client from a connection URL (`postgres://user:pass@host:port/db`): one
 * connection per statement or transaction (at most ten), and beside it the pools of the hot paths'
 * statements that stand alone, `Pipelined` for usage's read and `Charging` for the hits' charges
 * (why pools of their own, and why one is pipelined and the other not: `./Pipelined.ts`).
 */
export const layer = (
  url: string
): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient | Pipelined | Charging, SqlError> => {
  const config = { url: Redacted.make(url), types: makeTypes() }
  const pipelined = Layer.effect(
    Pipelined,
    PgClient.make({
      ...config,
      multiplex: true,
      maxConnections: pipelinedConnections,
      applicationName: pipelinedApplicationName
    })
  ).pipe(Layer.provide(Reactivity.layer))
  const charging = Layer.effect(
    Charging,
    PgClient.make({
      ...config,
      // All of them always open: one opened under load would make the charges taken onto it wait for
      // its set-up and for PL/pgSQL to compile the money rule in that session (17-43 ms).
      minConnections: chargingConnections,
      maxConnections: chargingConnections,
      applicationName: chargingApplicationName
    })
  ).pipe(Layer.provide(Reactivity.layer))
  return Layer.mergeAll(PgClient.layer(config), pipelined, charging)
}
