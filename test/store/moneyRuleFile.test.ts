import { readdirSync, readFileSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Database from "../../src/store/Database.ts"
import * as PgClient from "../../src/store/PgClient.ts"
import * as PgliteClient from "../../src/store/PgliteClient.ts"
import { postgresUrl, storeName } from "../support/database.ts"

/**
 * The live text of every function stands in migrations/functions.sql: the migrator applies it after
 * the numbered migrations, again when its text is new, and a function a numbered migration defines
 * cannot be missing from it.
 */

const migrationsDir = new URL("../../migrations/", import.meta.url)

const Definition = Schema.Struct({ name: Schema.String, args: Schema.String, def: Schema.String })
type Definition = typeof Definition.Type

/** Every function of `schema` (none comes from an extension): name, identity arguments, full definition. */
const functionsIn = (schema: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`SELECT p.proname AS name, pg_get_function_identity_arguments(p.oid) AS args,
        pg_get_functiondef(p.oid) AS def
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = ${schema}
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
      ORDER BY 1, 2`
    return rows.map((row) => Schema.decodeUnknownSync(Definition)(row))
  })

/**
 * The functions `text` defines, as the database keeps them: created in a schema of their own (the
 * tables they read are found in public), read back with that schema's name written as public's.
 */
const definedBy = (text: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`DROP SCHEMA IF EXISTS svc_file CASCADE`
    yield* sql`CREATE SCHEMA svc_file`
    yield* sql`SET search_path = svc_file, public`
    for (const statement of Database.statementsOf(text)) yield* sql.unsafe(statement)
    yield* sql`SET search_path = public`
    const found = yield* functionsIn("svc_file")
    yield* sql`DROP SCHEMA svc_file CASCADE`
    return found.map(({ name, args, def }) => ({
      name,
      args,
      def: def.replace("FUNCTION svc_file.", "FUNCTION public.")
    }))
  })

const byName = (definitions: ReadonlyArray<Definition>) =>
  new Map(definitions.map((definition) => [`${definition.name}(${definition.args})`, definition.def]))

const appliedRows = (name: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows =
      yield* sql`SELECT sha256, applied_at::text AS applied_at FROM svc_repeatable WHERE name = ${name}
      ORDER BY applied_at`
    return rows.map((row) =>
      Schema.decodeUnknownSync(Schema.Struct({ sha256: Schema.String, applied_at: Schema.String }))(row)
    )
  })

const prosrcOf = (name: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`SELECT prosrc FROM pg_proc WHERE proname = ${name}`
    return rows.map((row) => Schema.decodeUnknownSync(Schema.Struct({ prosrc: Schema.String }))(row).prosrc)
  })

const admin = (url: string, statement: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(statement)
  }).pipe(Effect.provide(PgClient.layer(url)), Effect.scoped)

/**
 * Runs `body` with a new, empty database (not migrated): in-memory PGlite, or a database of its own
 * on PostgreSQL, dropped after. `connect` gives one more client of the same database (PostgreSQL: a
 * pool of its own, as another instance has).
 */
const withEmptyDatabase = <A, E>(
  body: (connect: () => Layer.Layer<SqlClient.SqlClient>) => Effect.Effect<A, E, SqlClient.SqlClient>
): Effect.Effect<A, unknown> => {
  if (postgresUrl === undefined) {
    // One PGlite is one store: there is no second client of it to give.
    const connect = () => Layer.effect(SqlClient.SqlClient, Effect.die(new Error("PGlite has one client")))
    return Effect.scoped(
      body(connect).pipe(Effect.provide(Layer.orDie(PgliteClient.layer({ dataDir: ":memory:" }))))
    )
  }
  const server = postgresUrl
  const name = `svc_test_functions_${Math.random().toString(36).slice(2, 10)}`
  const url = new URL(server)
  url.pathname = `/${name}`
  const connect = () => Layer.orDie(PgClient.layer(url.toString()))
  return Effect.acquireUseRelease(
    admin(server, `CREATE DATABASE ${name}`),
    () => Effect.scoped(body(connect).pipe(Effect.provide(connect()))),
    () => Effect.ignore(admin(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  )
}

describe(`migrations/functions.sql holds every function's live text (${storeName})`, () => {
  it.effect("a migrated store's functions are the file's, each one, and nothing else", () =>
    withEmptyDatabase(() =>
      Effect.gen(function* () {
        yield* Database.runMigrations
        const live = yield* functionsIn("public")
        const file = yield* definedBy(Database.functionsFile().text)
        assert.isAbove(file.length, 20)
        assert.deepStrictEqual(
          live.map(({ name, args }) => `${name}(${args})`),
          file.map(({ name, args }) => `${name}(${args})`)
        )
        const expected = byName(file)
        for (const { name, args, def } of live)
          assert.strictEqual(def, expected.get(`${name}(${args})`), name)
        const rows = yield* appliedRows("functions.sql")
        assert.lengthOf(rows, 1)
      })
    )
  )

  it.effect(
    "a changed text is applied at the next migration, an unchanged one is not, an older one never again",
    () =>
      withEmptyDatabase(() =>
        Effect.gen(function* () {
          yield* Database.runMigrations
          const original = Database.functionsFile()
          const before = yield* appliedRows(original.name)
          assert.lengthOf(before, 1)

          // Unchanged: nothing is applied, nothing recorded.
          assert.strictEqual(yield* Database.applyRepeatable(original), "current")
          yield* Database.runMigrations
          assert.deepStrictEqual(yield* appliedRows(original.name), before)

          // A test copy with one function changed: applied, recorded, live.
          const from = "SELECT threshold > 0 AND spendable >= threshold"
          const to = "SELECT threshold > 0 AND spendable >= threshold + 0"
          assert.include(original.text, from)
          const changed = { name: original.name, text: original.text.replace(from, to) }
          assert.strictEqual(yield* Database.applyRepeatable(changed), "applied")
          assert.include((yield* prosrcOf("svc_alert_armed")).join(), to)
          const after = yield* appliedRows(original.name)
          assert.lengthOf(after, 2)
          assert.strictEqual(yield* Database.applyRepeatable(changed), "current")
          assert.deepStrictEqual(yield* appliedRows(original.name), after)

          // The first text again (an older release starting during a rolling restart): left as it is.
          assert.strictEqual(yield* Database.applyRepeatable(original), "superseded")
          assert.include((yield* prosrcOf("svc_alert_armed")).join(), to)
          assert.deepStrictEqual(yield* appliedRows(original.name), after)
        })
      )
  )

  it.effect("every function a numbered migration defines is in the file, with its arguments and result", () =>
    withEmptyDatabase(() =>
      Effect.gen(function* () {
        const file = Database.functionsFile().text
        const inFile = new Set(
          [...file.matchAll(/^CREATE OR REPLACE FUNCTION (\w+)\(/gm)].map((match) => match[1]!)
        )
        const inMigrations = new Set<string>()
        for (const name of readdirSync(migrationsDir)
          .filter((name) => /^\d+_.+\.sql$/.test(name))
          .sort()) {
          const text = readFileSync(new URL(name, migrationsDir), "utf8")
          for (const match of text.matchAll(/CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(\w+)\s*\(/gi))
            inMigrations.add(match[1]!)
        }
        assert.isAbove(inMigrations.size, 20)
        for (const name of inMigrations)
          assert.isTrue(inFile.has(name), `${name} is not in migrations/functions.sql`)

        // The same functions, as the numbered migrations alone leave them (a signature changed in
        // the file only would leave the old one beside it): each is the file's, arguments and result.
        yield* Database.runNumberedMigrations
        const numbered = yield* functionsIn("public")
        const sql = yield* SqlClient.SqlClient
        yield* sql`SET search_path = public`
        const defined = byName(yield* definedBy(file))
        // `CREATE OR REPLACE FUNCTION public.name(arguments)` and ` RETURNS ...`.
        const signature = (def: string) => def.split("\n").slice(0, 2).join("\n")
        for (const { name, args, def } of numbered) {
          const fileDef = defined.get(`${name}(${args})`)
          assert.isDefined(fileDef, `${name}(${args}) is not in migrations/functions.sql`)
          assert.strictEqual(signature(def), signature(fileDef!), name)
        }
      })
    )
  )

  it.effect.skipIf(postgresUrl === undefined)(
    "two instances migrating one new database at once both start",
    () =>
      withEmptyDatabase((connect) =>
        Effect.gen(function* () {
          const outcomes = yield* Effect.all(
            [
              Effect.provide(Database.runMigrations, connect()),
              Effect.provide(Database.runMigrations, connect()),
              Effect.provide(Database.runMigrations, connect())
            ],
            { concurrency: "unbounded" }
          )
          assert.lengthOf(outcomes, 3)
          assert.lengthOf(yield* appliedRows("functions.sql"), 1)
          const changed = Database.functionsFile()
          const text = changed.text.replace(
            "SELECT threshold > 0 AND spendable >= threshold",
            "SELECT threshold > 0 AND spendable >= threshold + 0"
          )
          const applied = yield* Effect.all(
            [1, 2, 3, 4].map(() =>
              Effect.provide(Database.applyRepeatable({ name: changed.name, text }), connect())
            ),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual([...applied].sort(), ["applied", "current", "current", "current"])
          assert.lengthOf(yield* appliedRows("functions.sql"), 2)
        })
      )
  )
})
