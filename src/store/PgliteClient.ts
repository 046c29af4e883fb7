/**
 * `SqlClient` over an in-process PGlite database, compiled exactly like `@effect/sql-pg`.
 *
 * Differences from `@effect/sql-pg` (see `./PgClient.ts`, which also returns int8 as numbers):
 * - int8 → `number`, or `bigint` beyond ±2^53 (same as our PgClient layer; plain sql-pg gives `bigint`);
 *   numeric → string, timestamp/timestamptz → `Date`, date → "YYYY-MM-DD", json/jsonb → parsed: same as sql-pg.
 * - interval and time come back as PostgreSQL text (sql-pg: `{ months, days, microseconds }` / bigint µs);
 *   parameters of sql-pg's `PgTypes` constructors other than json/jsonb are not re-encoded.
 * - PGlite has one connection: a transaction (or `sql.reserve`) holds it exclusively, so other fibers'
 *   statements wait until it ends; `stream` reads all rows before emitting (no cursor).
 */

import { mkdir } from "node:fs/promises"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as PgTypes from "@effect/sql-pg/PgTypes"
import type { PGlite, Results } from "@electric-sql/pglite"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Reactivity from "effect/reactivity/Reactivity"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as SqlClient from "effect/sql/SqlClient"
import type { Connection } from "effect/sql/SqlConnection"
import {
  AuthenticationError,
  AuthorizationError,
  ConnectionError,
  ConstraintError,
  DeadlockError,
  LockTimeoutError,
  SerializationError,
  SqlError,
  type SqlErrorReason,
  SqlSyntaxError,
  StatementTimeoutError,
  UniqueViolation,
  UnknownError
} from "effect/sql/SqlError"
import { type DataDirLocked, type DataDirUnusable, lockDataDir } from "./DataDirLock.ts"
import { templateMemoryFs, unpackTemplate } from "./PgliteTemplate.ts"

/** Raw access to the PGlite instance behind the `SqlClient`. */
export class PgliteClient extends Context.Service<PgliteClient, { readonly pglite: PGlite }>()(
  "store/PgliteClient"
) {}

export interface Options {
  /** `undefined` or `":memory:"` (or a `memory://` URL): in-memory; otherwise a directory, created if missing. */
  readonly dataDir: string | undefined
  /** The file of a data directory to start a new store from (a tar of `dumpDataDir`) instead of running `initdb`. */
  readonly template?: string | undefined
}

// -----------------------------------------------------------------------------
// errors
// -----------------------------------------------------------------------------

interface PgErrorFields {
  readonly code: string
  readonly constraint?: string | undefined
}

/** PGlite throws its `DatabaseError` (minified class name) carrying the PostgreSQL error fields. */
const isPgError = (u: unknown): u is Error & PgErrorFields =>
  u instanceof Error && typeof (u as { code?: unknown }).code === "string"

type ReasonProps = { readonly cause: unknown; readonly message: string; readonly operation: string }

/** SQLSTATE classification, the same as `@effect/sql-pg` (its own version is internal). */
const classify = (
  code: string | undefined,
  constraint: string | undefined,
  props: ReasonProps
): SqlErrorReason => {
  if (code === undefined) return new UnknownError(props)
  if (code.startsWith("08")) return new ConnectionError(props)
  if (code.startsWith("28")) return new AuthenticationError(props)
  if (code === "42501") return new AuthorizationError(props)
  if (code.startsWith("42")) return new SqlSyntaxError(props)
  if (code === "23505") {
    return new UniqueViolation({ ...props, constraint: constraint?.trim() || "unknown" })
  }
  if (code.startsWith("23")) return new ConstraintError(props)
  if (code === "40P01") return new DeadlockError(props)
  if (code === "40001") return new SerializationError(props)
  if (code === "55P03") return new LockTimeoutError(props)
  if (code === "57014") return new StatementTimeoutError(props)
  return new UnknownError(props)
}

const toSqlError = (cause: unknown, operation: string, pglite?: PGlite): SqlError => {
  const message = cause instanceof Error ? cause.message : String(cause)
  if (isPgError(cause)) {
    return new SqlError({ reason: classify(cause.code, cause.constraint, { cause, message, operation }) })
  }
  const props = { cause, message: `PgliteClient: ${message}`, operation }
  return new SqlError({
    reason:
      pglite?.closed === true || operation === "connect"
        ? new ConnectionError(props)
        : new UnknownError(props)
  })
}

// -----------------------------------------------------------------------------
// parameters: typed like @effect/sql-pg binds them, so the server infers the same types
// -----------------------------------------------------------------------------

const OID = PgTypes.OID
const INT32_MIN = -2147483648
const INT32_MAX = 2147483647

const arrayOids: ReadonlyMap<number, number> = new Map([
  [OID.bool, OID.boolArray],
  [OID.bytea, OID.byteaArray],
  [OID.int8, OID.int8Array],
  [OID.int4, OID.int4Array],
  [OID.text, OID.textArray],
  [OID.float8, OID.float8Array],
  [OID.timestamptz, OID.timestamptzArray]
])

interface Param {
  readonly oid: number
  readonly value: unknown
}

/** Mirrors `inferScalar` in `@effect/sql-pg/PgConnection`; oid `0` lets the server infer the type. */
const inferScalar = (value: unknown): Param => {
  if (PgTypes.isParameter(value)) {
    if (value.value === null || value.value === undefined) return { oid: value.oid, value: null }
    if (value.oid === OID.json || value.oid === OID.jsonb) {
      const text = JSON.stringify(value.value)
      if (text === undefined) throw new Error("Value cannot be serialised as JSON")
      return { oid: value.oid, value: text }
    }
    return value
  }
  if (value === null || value === undefined) return { oid: 0, value: null }
  switch (typeof value) {
    case "boolean":
      return { oid: OID.bool, value }
    case "bigint":
      return { oid: OID.int8, value }
    case "number":
      if (Number.isInteger(value)) {
        if (value >= INT32_MIN && value <= INT32_MAX) return { oid: OID.int4, value }
        if (Number.isSafeInteger(value)) return { oid: OID.int8, value }
      }
      return { oid: OID.float8, value }
    case "string":
      return { oid: 0, value }
  }
  if (value instanceof Date) return { oid: OID.timestamptz, value }
  if (value instanceof Uint8Array) return { oid: OID.bytea, value }
  if (value instanceof Int8Array) {
    return { oid: OID.bytea, value: new Uint8Array(value.buffer, value.byteOffset, value.byteLength) }
  }
  throw new Error(`Cannot infer a PostgreSQL type for ${String(value)}`)
}

/** Mirrors `inferParameter` in `@effect/sql-pg/PgConnection` (one-dimensional arrays of one type). */
const inferParameter = (value: unknown): Param => {
  if (!Array.isArray(value)) return inferScalar(value)
  if (value.length === 0) return { oid: 0, value: "{}" }
  let elementOid: number | undefined
  const values: Array<unknown> = []
  for (const element of value) {
    if (Array.isArray(element)) throw new Error("Nested array parameters are not supported")
    const param = inferScalar(element)
    if (param.value === null) {
      values.push(null)
      continue
    }
    const oid = param.oid === 0 ? OID.text : param.oid
    if (elementOid === undefined) elementOid = oid
    else if (elementOid !== oid) throw new Error("Array parameter elements must have the same inferred OID")
    values.push(param.value)
  }
  if (elementOid === undefined)
    throw new Error("Cannot infer the type of an array containing only null values")
  const arrayOid = arrayOids.get(elementOid)
  if (arrayOid === undefined) throw new Error(`No array type known for element OID ${elementOid}`)
  return { oid: arrayOid, value: values }
}

interface Bound {
  readonly values: Array<unknown>
  readonly paramTypes: Array<number>
}

const bind = (params: ReadonlyArray<unknown>): Effect.Effect<Bound, SqlError> =>
  params.length === 0
    ? Effect.succeed({ values: [], paramTypes: [] })
    : Effect.try({
        try: () => {
          const values: Array<unknown> = []
          const paramTypes: Array<number> = []
          for (const param of params) {
            const inferred = inferParameter(param)
            values.push(inferred.value)
            paramTypes.push(inferred.oid)
          }
          return { values, paramTypes }
        },
        catch: (cause) => toSqlError(cause, "bind")
      })

// -----------------------------------------------------------------------------
// result parsers: match @effect/sql-pg's decoding where PGlite's defaults differ
// -----------------------------------------------------------------------------

const invalidDate = () => new Date(Number.NaN)

const parsers = {
  // sql-pg decodes `date` to "YYYY-MM-DD" (PGlite: a Date at UTC midnight).
  [OID.date]: (value: string) => value,
  // sql-pg maps `timestamp` wall-clock fields to UTC (PGlite: parsed in the process's local zone).
  [OID.timestamp]: (value: string) =>
    value === "infinity" || value === "-infinity" ? invalidDate() : new Date(`${value.replace(" ", "T")}Z`),
  // sql-pg decodes ±infinity to an invalid Date (PGlite: ±Infinity numbers).
  [OID.timestamptz]: (value: string) =>
    value === "infinity" || value === "-infinity" ? invalidDate() : new Date(value)
}

// -----------------------------------------------------------------------------
// connection
// -----------------------------------------------------------------------------

type TransformRows = (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined

/** The frontend messages of one statement, in one buffer. */
const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  let length = 0
  for (const part of parts) length += part.length
  const out = new Uint8Array(length)
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

/** PGlite's wire protocol and result parsing, loaded with PGlite (a service on PostgreSQL never loads it). */
type Wire = Pick<typeof import("@electric-sql/pglite"), "protocol" | "parse">

/** Statements kept prepared on a connection: `@effect/sql-pg`'s default on PostgreSQL's. */
const preparedLimit = 100

/** Names of prepared statements, unique in the process (several clients may share one PGlite). */
let named = 0

/** SQLSTATE of "cached plan must not change result type": a prepared statement outlived its table's shape. */
const planChanged = "0A000"

/**
 * Runs statements the way the extended protocol runs them on PostgreSQL, each in one call into
 * PGlite: [Close], [Parse], Bind, Describe, Execute, Sync in one buffer. `pglite.query` sends the
 * same messages one at a time (six calls, one of them a Describe of the statement to learn its
 * parameters' types) and parses and plans the text every time; here the types are known (oid 0:
 * the server infers it, and the value goes as text, as PGlite would send it), the values are encoded
 * with PGlite's own serializers, and a prepared statement's text is parsed once and its plan kept
 * (PostgreSQL's plan cache: custom plans first, a generic one once it is no worse), the last
 * `preparedLimit` statements by their text and parameter types. A statement that fails is closed
 * (closing one that does not exist is no error), so no name is ever parsed twice; one whose table
 * changed shape under it is forgotten and run again unprepared.
 */
const statementsOf = (pglite: PGlite, { protocol, parse }: Wire) => {
  const describePortal = protocol.serialize.describe({ type: "P" })
  const executePortal = protocol.serialize.execute({})
  const syncMessage = protocol.serialize.sync()
  const prepared = new Map<string, string>()
  const toClose: Array<string> = []

  const encode = (bound: Bound) =>
    bound.values.map((value, i) => {
      if (value === null || value === undefined) return null
      const serialize = pglite.serializers[bound.paramTypes[i]!]
      return serialize === undefined ? String(value) : serialize(value)
    })

  const send = async (sql: string, bound: Bound, rowMode: "object" | "array", prepare: boolean) => {
    const parts: Array<Uint8Array> = []
    for (const name of toClose.splice(0)) parts.push(protocol.serialize.close({ type: "S", name }))
    const key = prepare ? `${bound.paramTypes.join(",")} ${sql}` : ""
    const known = prepare ? prepared.get(key) : undefined
    // A statement prepared now: parsed under a new name, kept once it has run.
    const fresh = prepare && known === undefined
    const name = !prepare ? "" : (known ?? `svc_${++named}`)
    if (known === undefined)
      parts.push(protocol.serialize.parse({ text: sql, types: bound.paramTypes, name }))
    else {
      // The most recently used last: the first in the map is the one to close when it is full.
      prepared.delete(key)
      prepared.set(key, known)
    }
    parts.push(
      protocol.serialize.bind({ statement: name, values: encode(bound) }),
      describePortal,
      executePortal,
      syncMessage
    )
    try {
      const { messages } = await pglite.execProtocol(concat(parts))
      if (fresh) {
        prepared.set(key, name)
        if (prepared.size > preparedLimit) {
          const [oldest, oldestName] = prepared.entries().next().value!
          prepared.delete(oldest)
          toClose.push(oldestName)
        }
      }
      return parse.parseResults(messages, pglite.parsers, { rowMode })[0]! as Results<any>
    } catch (cause) {
      if (fresh) toClose.push(name)
      else if (known !== undefined && isPgError(cause) && cause.code === planChanged) {
        prepared.delete(key)
        toClose.push(name)
        return send(sql, bound, rowMode, false)
      }
      throw cause
    }
  }

  return (sql: string, bound: Bound, rowMode: "object" | "array", prepare: boolean) =>
    Effect.tryPromise({
      try: () => send(sql, bound, rowMode, prepare),
      catch: (cause) => toSqlError(cause, "query", pglite)
    })
}

const makeConnection = (pglite: PGlite, wire: Wire): Connection => {
  const statement = statementsOf(pglite, wire)
  const run = (sql: string, params: ReadonlyArray<unknown>, rowMode: "object" | "array", prepare = true) =>
    Effect.flatMap(bind(params), (bound) => statement(sql, bound, rowMode, prepare))
  const execute = (
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: TransformRows,
    prepare = true
  ) =>
    Effect.map(
      run(sql, params, "object", prepare),
      (result): ReadonlyArray<any> => (transformRows ? transformRows(result.rows) : result.rows)
    )
  const executeValues = (sql: string, params: ReadonlyArray<unknown>, prepare = true) =>
    Effect.map(
      run(sql, params, "array", prepare),
      (result): ReadonlyArray<ReadonlyArray<unknown>> => result.rows
    )
  // Prepared and unprepared as `@effect/sql-pg` has them.
  return {
    execute: (sql, params, transformRows) => execute(sql, params, transformRows),
    executeUnprepared: (sql, params, transformRows) => execute(sql, params, transformRows, false),
    executeRaw: (sql, params) => run(sql, params, "object"),
    executeValues: (sql, params) => executeValues(sql, params),
    executeValuesUnprepared: (sql, params) => executeValues(sql, params, false),
    executeStream: (sql, params, transformRows) =>
      Stream.unwrap(Effect.map(execute(sql, params, transformRows), Stream.fromIterable))
  }
}

/** PostgreSQL answers `COMMIT` of an aborted transaction with `ROLLBACK`; PGlite does not fail on it. */
const commit = (conn: Connection): Effect.Effect<void, SqlError> =>
  Effect.flatMap(conn.executeRaw("COMMIT", []), (result) =>
    (result as Results).command === "ROLLBACK"
      ? Effect.fail(
          new SqlError({
            reason: new UnknownError({
              cause: new Error("COMMIT rolled back an aborted transaction"),
              message: "PgliteClient: COMMIT rolled back an aborted transaction",
              operation: "commit"
            })
          })
        )
      : Effect.void
  )

/**
 * Builds a `SqlClient` over an open PGlite instance (which it does not close).
 *
 * One permit guards the single connection: a statement outside a transaction holds it for the statement,
 * a transaction (or `sql.reserve`) for its whole scope. Statements inside a transaction run on the
 * transaction's connection without taking the permit, so they cannot deadlock; only a *new* top-level
 * transaction or `reserve` started from inside one (e.g. by a fiber that dropped the transaction context)
 * would wait forever.
 */
export const make = Effect.fn("PgliteClient.make")(function* (pglite: PGlite) {
  const semaphore = yield* Semaphore.make(1)
  const connection = makeConnection(pglite, yield* Effect.promise(() => import("@electric-sql/pglite")))
  const lease: Effect.Effect<Connection, never, Scope.Scope> = Effect.as(semaphore.takeScoped(1), connection)
  return yield* SqlClient.make({
    driver: "pglite",
    acquirer: lease,
    transactionAcquirer: lease,
    borrower: (f) => semaphore.withPermit(f(connection)),
    compiler: PgClient.makeCompiler(),
    commit,
    releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
    spanAttributes: [
      ["db.system.name", "postgresql"],
      ["db.namespace", "postgres"]
    ]
  })
})

/**
 * PostgreSQL settings after PGlite's own. `shared_buffers`: PostgreSQL's default 128 MB is all
 * resident in PGlite's memory; 16 MB holds this service's working set, and a miss reads a page
 * from a file the OS (or, in memory, PGlite) already holds. `min_wal_size`: a checkpoint keeps two
 * WAL files (16 MB each, in memory for a `:memory:` store) for reuse rather than five; see
 * `PgliteCheckpoints.ts` for what checkpoints here.
 */
const settings = ["shared_buffers=16MB", "min_wal_size=32MB", "max_wal_size=64MB"].flatMap((setting) => [
  "-c",
  setting
])

const isInMemory = (dataDir: string | undefined): boolean =>
  dataDir === undefined || dataDir === ":memory:" || dataDir.startsWith("memory://")

const open = Effect.fn("PgliteClient.open")(function* (
  dataDir: string | undefined,
  template: string | undefined
) {
  const directory = isInMemory(dataDir) ? undefined : dataDir
  if (directory !== undefined && !directory.includes("://")) {
    yield* Effect.tryPromise({
      try: () => mkdir(directory, { recursive: true }),
      catch: (cause) => toSqlError(cause, "connect")
    })
    // One process per directory: a second PGlite over the same files would corrupt them.
    yield* lockDataDir(directory)
  }
  // Loaded here, not with the module: a service on PostgreSQL never needs PGlite.
  const pgliteModule = yield* Effect.promise(() => import("@electric-sql/pglite"))
  const { PGlite } = pgliteModule
  if (directory !== undefined && template !== undefined) {
    yield* Effect.try({
      try: () => unpackTemplate(template, directory),
      catch: (cause) => toSqlError(cause, "connect")
    })
  }
  return yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: () => {
        const startParams = [...PGlite.defaultStartParams, ...settings]
        if (directory !== undefined) return PGlite.create(directory, { parsers, startParams })
        const fs = template === undefined ? undefined : templateMemoryFs(pgliteModule, template)
        return PGlite.create(fs === undefined ? { parsers, startParams } : { parsers, startParams, fs })
      },
      catch: (cause) => toSqlError(cause, "connect")
    }),
    (pglite) =>
      Effect.tryPromise(() => pglite.close()).pipe(
        Effect.ignore({ log: true, message: "PgliteClient: failed to close PGlite" })
      )
  )
})

/** `SqlClient` (PostgreSQL dialect) and raw `PgliteClient` access; PGlite is closed with the layer's scope. */
export const layer = (
  options: Options
): Layer.Layer<SqlClient.SqlClient | PgliteClient, SqlError | DataDirLocked | DataDirUnusable> =>
  Layer.effectContext(
    Effect.gen(function* () {
      const pglite = yield* open(options.dataDir, options.template)
      const sql = yield* make(pglite)
      return Context.make(PgliteClient, { pglite }).pipe(Context.add(SqlClient.SqlClient, sql))
    })
  ).pipe(Layer.provide(Reactivity.layer))
