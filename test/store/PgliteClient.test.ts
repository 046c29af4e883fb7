import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it, layer, type Vitest } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as SqlClient from "effect/sql/SqlClient"
import { SqlError } from "effect/sql/SqlError"
import * as PgClient from "../../src/store/PgClient.ts"
import * as PgliteClient from "../../src/store/PgliteClient.ts"

const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL

const uniqueSchema = () => `test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`

/** Creates the schema the tests use and drops it (with everything in it) when the layer is released. */
const schemaLayer = (schema: string) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* Effect.acquireRelease(sql`CREATE SCHEMA ${sql(schema)}`, () =>
        sql`DROP SCHEMA ${sql(schema)} CASCADE`.pipe(Effect.orDie)
      )
    })
  )

const sleepMillis = (ms: number) =>
  Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

type Tester = Vitest.MethodsNonLive<SqlClient.SqlClient>

/** The same behaviour is expected from PGlite and from PostgreSQL through @effect/sql-pg. */
const sharedSuite = (it: Tester, schema: string) => {
  const table = (sql: SqlClient.SqlClient, name: string) => sql(`${schema}.${name}`)

  it.effect("creates a table, inserts and selects with parameters", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const people = table(sql, "people")
      yield* sql`CREATE TABLE ${people} (id serial PRIMARY KEY, name text NOT NULL, age int4, score int8)`
      yield* sql`INSERT INTO ${people} (name, age, score) VALUES (${"alice"}, ${30}, ${10})`
      const inserted = yield* sql<{ id: number; name: string }>`INSERT INTO ${people} ${sql.insert([
        { name: "bob", age: 40, score: 20 },
        { name: "carol", age: null, score: 9007199254740993n }
      ])} RETURNING id, name`
      assert.deepStrictEqual(
        inserted.map((row) => row.name),
        ["bob", "carol"]
      )
      const rows = yield* sql<{ name: string; age: number | null; score: number | bigint }>`
        SELECT name, age, score FROM ${people} WHERE age > ${25} OR age IS NULL ORDER BY id`
      assert.deepStrictEqual(rows, [
        { name: "alice", age: 30, score: 10 },
        { name: "bob", age: 40, score: 20 },
        { name: "carol", age: null, score: 9007199254740993n }
      ])
      assert.strictEqual(Object.getPrototypeOf(rows[0]), Object.prototype)
      const [count] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ${people}`
      assert.strictEqual(count?.n, 3)
      const updated =
        yield* sql`UPDATE ${people} SET ${sql.update({ age: 31 })} WHERE name = ${"alice"} RETURNING age`
      assert.deepStrictEqual(updated, [{ age: 31 }])
      const unsafe = yield* sql.unsafe<{ name: string }>(
        `SELECT name FROM "${schema}".people WHERE id = $1`,
        [1]
      )
      assert.deepStrictEqual(unsafe, [{ name: "alice" }])
      const values = yield* sql`SELECT name, age FROM ${people} WHERE id = ${2}`.values
      assert.deepStrictEqual(values, [["bob", 40]])
      const streamed = yield* sql<{ name: string }>`SELECT name FROM ${people} ORDER BY id`.stream.pipe(
        Stream.map((row) => row.name),
        Stream.runCollect
      )
      assert.deepStrictEqual(Array.from(streamed), ["alice", "bob", "carol"])
    })
  )

  it.effect("sql.in", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const items = table(sql, "items_in")
      yield* sql`CREATE TABLE ${items} (id int4 PRIMARY KEY, label text NOT NULL)`
      yield* sql`INSERT INTO ${items} ${sql.insert([
        { id: 1, label: "item 1" },
        { id: 2, label: "item 2" },
        { id: 3, label: "item 3" },
        { id: 4, label: "item 4" }
      ])}`
      const byId = yield* sql<{
        id: number
      }>`SELECT id FROM ${items} WHERE id IN ${sql.in([2, 4, 5])} ORDER BY id`
      assert.deepStrictEqual(byId, [{ id: 2 }, { id: 4 }])
      const byLabel = yield* sql<{
        id: number
      }>`SELECT id FROM ${items} WHERE ${sql.in("label", ["item 1", "item 3"])}
        ORDER BY id`
      assert.deepStrictEqual(byLabel, [{ id: 1 }, { id: 3 }])
      const none = yield* sql`SELECT id FROM ${items} WHERE id IN ${sql.in([])}`
      assert.deepStrictEqual(none, [])
      const anyArray = yield* sql<{
        id: number
      }>`SELECT id FROM ${items} WHERE id = ANY(${[1, 3]}) ORDER BY id`
      assert.deepStrictEqual(anyArray, [{ id: 1 }, { id: 3 }])
    })
  )

  it.effect("JSON columns round-trip", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const docs = table(sql, "docs")
      yield* sql`CREATE TABLE ${docs} (id int4 PRIMARY KEY, body jsonb NOT NULL, raw json)`
      const body = { name: "x", tags: ["a", "b"], nested: { n: 1.5, ok: true, none: null } }
      yield* sql`INSERT INTO ${docs} ${sql.insert({ id: 1, body: JSON.stringify(body), raw: JSON.stringify([1, 2]) })}`
      const rows = yield* sql<{ body: unknown; raw: unknown }>`SELECT body, raw FROM ${docs} WHERE id = ${1}`
      assert.deepStrictEqual(rows, [{ body, raw: [1, 2] }])
      const [field] = yield* sql<{ name: string }>`SELECT body->>'name' AS name FROM ${docs}
        WHERE body @> ${JSON.stringify({ tags: ["b"] })}`
      assert.strictEqual(field?.name, "x")
    })
  )

  it.effect("value types match between drivers", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const at = new Date("2024-05-06T07:08:09.123Z")
      const [row] = yield* sql<Record<string, unknown>>`SELECT
        ${1} AS int_param, ${1.5} AS float_param, ${true} AS bool_param, ${"text"} AS text_param,
        ${at} AS date_param, ${new Uint8Array([1, 2, 255])} AS bytes_param,
        12::int8 AS int8, 1.50::numeric AS numeric, '2024-01-02'::date AS date,
        ${at}::timestamptz AS timestamptz, '2024-01-02 03:04:05.678'::timestamp AS timestamp,
        'infinity'::timestamptz AS infinite, ARRAY[1, 2]::int8[] AS int8s, NULL::text AS nothing`
      assert.deepStrictEqual(row, {
        int_param: 1,
        float_param: 1.5,
        bool_param: true,
        text_param: "text",
        date_param: at,
        bytes_param: new Uint8Array([1, 2, 255]),
        int8: 12,
        numeric: "1.50",
        date: "2024-01-02",
        timestamptz: at,
        timestamp: new Date("2024-01-02T03:04:05.678Z"),
        infinite: new Date(Number.NaN),
        int8s: [1, 2],
        nothing: null
      })
    })
  )

  it.effect("a transaction commits", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const t = table(sql, "tx_commit")
      yield* sql`CREATE TABLE ${t} (id int4 PRIMARY KEY)`
      const result = yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`INSERT INTO ${t} (id) VALUES (${1})`
          // concurrent child fibers inside the transaction share its connection
          yield* Effect.all(
            [sql`INSERT INTO ${t} (id) VALUES (${2})`, sql`INSERT INTO ${t} (id) VALUES (${3})`],
            {
              concurrency: "unbounded"
            }
          )
          const rows = yield* sql<{ id: number }>`SELECT id FROM ${t} ORDER BY id`
          return rows.map((row) => row.id)
        })
      )
      assert.deepStrictEqual(result, [1, 2, 3])
      const rows = yield* sql<{ id: number }>`SELECT id FROM ${t} ORDER BY id`
      assert.deepStrictEqual(
        rows.map((row) => row.id),
        [1, 2, 3]
      )
    })
  )

  it.effect("a failing transaction rolls back", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const t = table(sql, "tx_rollback")
      yield* sql`CREATE TABLE ${t} (id int4 PRIMARY KEY)`
      const error = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* sql`INSERT INTO ${t} (id) VALUES (${1})`
            return yield* Effect.fail("boom" as const)
          })
        )
        .pipe(Effect.flip)
      assert.strictEqual(error, "boom")
      // a database error rolls back too
      const dbError = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* sql`INSERT INTO ${t} (id) VALUES (${2})`
            yield* sql`INSERT INTO ${t} (id) VALUES (${2})`
          })
        )
        .pipe(Effect.flip)
      assert.instanceOf(dbError, SqlError)
      assert.strictEqual(dbError.reason._tag, "UniqueViolation")
      const rows = yield* sql`SELECT id FROM ${t}`
      assert.deepStrictEqual(rows, [])
    })
  )

  it.effect("a nested transaction rolls back to its savepoint", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const t = table(sql, "tx_nested")
      yield* sql`CREATE TABLE ${t} (label text PRIMARY KEY)`
      const insert = (label: string) => sql`INSERT INTO ${t} (label) VALUES (${label})`
      yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* insert("outer")
          const inner = yield* sql
            .withTransaction(
              Effect.gen(function* () {
                yield* insert("inner")
                yield* sql.withTransaction(insert("inner-inner"))
                return yield* Effect.fail("inner failed" as const)
              })
            )
            .pipe(Effect.flip)
          assert.strictEqual(inner, "inner failed")
          yield* sql.withTransaction(insert("kept"))
          yield* insert("after")
        })
      )
      const rows = yield* sql<{ label: string }>`SELECT label FROM ${t} ORDER BY label`
      assert.deepStrictEqual(
        rows.map((row) => row.label),
        ["after", "kept", "outer"]
      )
    })
  )

  it.effect("COMMIT of an aborted transaction fails", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const t = table(sql, "tx_aborted")
      yield* sql`CREATE TABLE ${t} (id int4 PRIMARY KEY)`
      const error = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* sql`INSERT INTO ${t} (id) VALUES (${1})`
            yield* sql`SELECT * FROM ${table(sql, "does_not_exist")}`.pipe(Effect.ignore)
          })
        )
        .pipe(Effect.flip)
      assert.instanceOf(error, SqlError)
      assert.include(error.message, "COMMIT rolled back")
      assert.deepStrictEqual(yield* sql`SELECT id FROM ${t}`, [])
    })
  )

  it.effect("errors become SqlError with a reason", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const syntax = yield* Effect.flip(sql`SELEC 1`)
      assert.strictEqual(syntax.reason._tag, "SqlSyntaxError")
      const missing = yield* Effect.flip(sql`SELECT * FROM ${table(sql, "missing_table")}`)
      assert.strictEqual(missing.reason._tag, "SqlSyntaxError")
      const t = table(sql, "errors")
      yield* sql`CREATE TABLE ${t} (id int4 PRIMARY KEY, n int4 CHECK (n > 0))`
      yield* sql`INSERT INTO ${t} (id, n) VALUES (${1}, ${1})`
      const unique = yield* Effect.flip(sql`INSERT INTO ${t} (id, n) VALUES (${1}, ${1})`)
      assert.strictEqual(unique.reason._tag, "UniqueViolation")
      if (unique.reason._tag === "UniqueViolation")
        assert.strictEqual(unique.reason.constraint, "errors_pkey")
      const check = yield* Effect.flip(sql`INSERT INTO ${t} (id, n) VALUES (${2}, ${-1})`)
      assert.strictEqual(check.reason._tag, "ConstraintError")
      assert.isDefined(check.cause)
      const uninferable = yield* Effect.flip(sql`SELECT ${{ not: "a primitive" }} AS x`)
      assert.instanceOf(uninferable, SqlError)
    })
  )
}

describe("PgliteClient", () => {
  const schema = uniqueSchema()

  layer(Layer.provideMerge(schemaLayer(schema), PgliteClient.layer({ dataDir: undefined })))(
    "in memory",
    (it) => {
      sharedSuite(it, schema)

      it.effect("uses PGlite error messages", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const error = yield* Effect.flip(sql`SELECT * FROM ${sql(`${schema}.nope`)}`)
          assert.include(error.message, `relation "${schema}.nope" does not exist`)
          assert.strictEqual(sql.driver, "pglite")
        })
      )

      it.effect("gives raw access to PGlite", () =>
        Effect.gen(function* () {
          const { pglite } = yield* PgliteClient.PgliteClient
          const result = yield* Effect.promise(() => pglite.query<{ n: number }>("SELECT 41 + 1 AS n"))
          assert.deepStrictEqual(result.rows, [{ n: 42 }])
        })
      )

      it.effect(
        "prepared statements: one that failed runs again, one whose table changed shape is planned again, and past the limit the oldest are closed",
        () =>
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const { pglite } = yield* PgliteClient.PgliteClient
            const t = sql(`${schema}.prepared`)
            yield* sql`CREATE TABLE ${t} (id int4 PRIMARY KEY, n int4 NOT NULL)`
            const insert = (id: number, n: number) => sql`INSERT INTO ${t} (id, n) VALUES (${id}, ${n})`
            yield* insert(1, 1)
            // The same text fails at execution (its first run and a later one), then succeeds.
            assert.strictEqual((yield* Effect.flip(insert(1, 2))).reason._tag, "UniqueViolation")
            assert.strictEqual((yield* Effect.flip(insert(1, 3))).reason._tag, "UniqueViolation")
            yield* insert(2, 2)
            // A failure inside a transaction, and the same statements after its rollback.
            const inTransaction = yield* Effect.flip(
              sql.withTransaction(Effect.andThen(insert(3, 3), insert(1, 1)))
            )
            assert.strictEqual(inTransaction.reason._tag, "UniqueViolation")
            yield* insert(3, 3)
            const all = () => sql<Record<string, number>>`SELECT * FROM ${t} ORDER BY id`
            assert.deepStrictEqual(yield* all(), [
              { id: 1, n: 1 },
              { id: 2, n: 2 },
              { id: 3, n: 3 }
            ])
            // `SELECT *` prepared, then the table gains a column: the statement is planned again.
            yield* sql`ALTER TABLE ${t} ADD COLUMN m int4 NOT NULL DEFAULT 7`
            assert.deepStrictEqual((yield* all())[0], { id: 1, n: 1, m: 7 })
            // Statements that fail on their first run are closed, not left prepared.
            for (let i = 0; i < 5; i++) {
              const failed = yield* Effect.flip(
                sql.unsafe(`INSERT INTO ${schema}.prepared (id, n) VALUES ($1, ${i})`, [1])
              )
              assert.strictEqual(failed.reason._tag, "UniqueViolation")
            }
            // More distinct statements than are kept: each still answers, and the server holds at most the limit.
            for (let i = 0; i < 130; i++) {
              const [row] = yield* sql.unsafe<{ k: number }>(`SELECT $1::int4 + ${i} AS k`, [1])
              assert.strictEqual(row?.k, i + 1)
            }
            const held = yield* Effect.promise(() =>
              pglite.query<{ n: number }>("SELECT count(*)::int4 AS n FROM pg_prepared_statements")
            )
            assert.isAtMost(held.rows[0]!.n, 101)
            assert.isAtLeast(held.rows[0]!.n, 90)
          })
      )

      it.effect("serialises concurrent transactions (read-modify-write)", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const counter = sql(`${schema}.counter`)
          yield* sql`CREATE TABLE ${counter} (id int4 PRIMARY KEY, n int4 NOT NULL)`
          yield* sql`INSERT INTO ${counter} (id, n) VALUES (1, 0)`
          const log: Array<string> = []
          const bump = (worker: number) =>
            sql.withTransaction(
              Effect.gen(function* () {
                log.push(`begin ${worker}`)
                const [row] = yield* sql<{ n: number }>`SELECT n FROM ${counter} WHERE id = 1`
                yield* Effect.yieldNow
                yield* sleepMillis(0)
                yield* sql`UPDATE ${counter} SET n = ${row!.n + 1} WHERE id = 1`
                log.push(`end ${worker}`)
              })
            )
          const workers = [1, 2, 3, 4]
          yield* Effect.forEach(
            workers,
            (worker) => Effect.forEach(Array.from({ length: 20 }), () => bump(worker), { discard: true }),
            { concurrency: "unbounded", discard: true }
          )
          const [final] = yield* sql<{ n: number }>`SELECT n FROM ${counter} WHERE id = 1`
          assert.strictEqual(final?.n, workers.length * 20)
          // no interleaving: every "begin" is directly followed by its own "end"
          for (let index = 0; index < log.length; index += 2) {
            assert.strictEqual(log[index + 1], log[index]!.replace("begin", "end"))
          }
        })
      )

      it.effect("statements outside a transaction wait until it ends", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const t = sql(`${schema}.waiting`)
          yield* sql`CREATE TABLE ${t} (id int4 PRIMARY KEY)`
          const started = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const transaction = yield* Effect.forkChild(
            sql.withTransaction(
              Effect.gen(function* () {
                yield* sql`INSERT INTO ${t} (id) VALUES (${1})`
                yield* Deferred.succeed(started, undefined)
                yield* Deferred.await(release)
                yield* sql`INSERT INTO ${t} (id) VALUES (${2})`
              })
            )
          )
          yield* Deferred.await(started)
          const outside = yield* Effect.forkChild(sql<{ id: number }>`SELECT id FROM ${t} ORDER BY id`)
          yield* sleepMillis(50)
          assert.isUndefined(outside.pollUnsafe())
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(transaction)
          const rows = yield* Fiber.join(outside)
          assert.deepStrictEqual(
            rows.map((row) => row.id),
            [1, 2]
          )
        })
      )
    }
  )

  it.effect("persists a file-backed dataDir across layer builds", () =>
    Effect.gen(function* () {
      const root = yield* Effect.acquireRelease(
        Effect.promise(() => mkdtemp(join(tmpdir(), "pglite-test-"))),
        (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
      )
      const dataDir = join(root, "nested", "db")
      const first = Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE kv (k text PRIMARY KEY, v jsonb NOT NULL)`
        yield* sql`INSERT INTO kv ${sql.insert({ k: "a", v: JSON.stringify({ n: 1 }) })}`
        return yield* PgliteClient.PgliteClient
      })
      const second = Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ k: string; v: unknown }>`SELECT k, v FROM kv`
      })
      const { pglite } = yield* first.pipe(Effect.provide(PgliteClient.layer({ dataDir })))
      assert.isTrue(pglite.closed)
      const rows = yield* second.pipe(Effect.provide(PgliteClient.layer({ dataDir })))
      assert.deepStrictEqual(rows, [{ k: "a", v: { n: 1 } }])
    })
  )

  it.effect('":memory:" is a fresh database each time', () =>
    Effect.gen(function* () {
      const program = Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE only_once (id int4)`
      })
      yield* program.pipe(Effect.provide(PgliteClient.layer({ dataDir: ":memory:" })))
      yield* program.pipe(Effect.provide(PgliteClient.layer({ dataDir: ":memory:" })))
    })
  )
})

describe.skipIf(TEST_DATABASE_URL === undefined)("PgClient (runs only with TEST_DATABASE_URL set)", () => {
  const schema = uniqueSchema()
  layer(Layer.provideMerge(schemaLayer(schema), PgClient.layer(TEST_DATABASE_URL ?? "")))(
    "postgres",
    (it) => {
      sharedSuite(it, schema)
    }
  )
})
