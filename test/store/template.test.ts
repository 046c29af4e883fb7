import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Database from "../../src/store/Database.ts"
import { lockFileName } from "../../src/store/DataDirLock.ts"
import * as PgliteClient from "../../src/store/PgliteClient.ts"
import { findTemplate, isNewStore, makeTemplateApart, templateDir } from "../../src/store/PgliteTemplate.ts"
import { withoutEntries } from "../../src/store/tar.ts"

const migrationIds = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT migration_id FROM effect_sql_migrations ORDER BY migration_id`
  return rows.map(
    (row) => Schema.decodeUnknownSync(Schema.Struct({ migration_id: Schema.Number }))(row).migration_id
  )
})

const expectedIds = Effect.map(Database.loadMigrations, (migrations) => migrations.map(([id]) => id))

describe("PGlite stores start from a migrated template", () => {
  it.effect(
    "a new directory is migrated, kept, and reopened as it was; the template loads as a whole store",
    () =>
      Effect.gen(function* () {
        const root = yield* Effect.acquireRelease(
          Effect.promise(() => mkdtemp(join(tmpdir(), "svc-template-"))),
          (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
        )
        const dataDir = join(root, "db")
        assert.isTrue(isNewStore(dataDir))
        assert.isTrue(isNewStore(":memory:"))
        const expected = yield* expectedIds

        const first = yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`CREATE TABLE kept (v text)`
          yield* sql`INSERT INTO kept VALUES ('here')`
          return yield* migrationIds
        }).pipe(Effect.provide(Database.pglite(dataDir)))
        assert.deepStrictEqual(first, expected)
        // Migrated and written: the directory is a store now, and a template exists for these migrations.
        assert.isFalse(isNewStore(dataDir))
        const templates = (yield* Effect.promise(() => readdir(templateDir))).filter((name) =>
          name.endsWith(".tar")
        )
        assert.lengthOf(templates, 1, "one template, for the current migrations")

        const reopened = yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          return yield* sql`SELECT v FROM kept`
        }).pipe(Effect.provide(Database.pglite(dataDir)))
        assert.deepStrictEqual(reopened, [{ v: "here" }])

        // The template alone (no migrations run on it) is a whole, migrated, empty store.
        const template = yield* findTemplate()
        assert.isDefined(template)
        // Without its maker's lock: a store made from it keeps its own.
        const tar = new Uint8Array(yield* Effect.promise(() => readFile(template!)))
        assert.strictEqual(withoutEntries(tar, new Set([lockFileName])).length, tar.length)
        const fromTemplate = yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const accounts = yield* sql`SELECT count(*)::int AS n FROM accounts`
          return { ids: yield* migrationIds, accounts }
        }).pipe(Effect.provide(Layer.orDie(PgliteClient.layer({ dataDir: ":memory:", template }))))
        assert.deepStrictEqual(fromTemplate.ids, expected)
        assert.deepStrictEqual(fromTemplate.accounts, [{ n: 0 }])

        // A second new directory is unpacked from it: a migrated, empty store, locked by this process.
        const second = join(root, "second")
        const fromDirectory = yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const lock = yield* Effect.promise(() => readFile(join(second, lockFileName), "utf8"))
          const tables = yield* sql`SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'kept'`
          return { ids: yield* migrationIds, lock: lock.trim(), tables }
        }).pipe(Effect.provide(Database.pglite(second)))
        assert.deepStrictEqual(fromDirectory, {
          ids: expected,
          lock: String(process.pid),
          tables: [{ n: 0 }]
        })
        assert.isFalse(isNewStore(second))
        const reopenedSecond = yield* migrationIds.pipe(Effect.provide(Database.pglite(second)))
        assert.deepStrictEqual(reopenedSecond, expected)
      }).pipe(Effect.scoped)
  )

  it.effect(
    "another process makes the template: a whole, migrated, empty store; none when it cannot be written",
    () =>
      Effect.gen(function* () {
        const root = yield* Effect.acquireRelease(
          Effect.promise(() => mkdtemp(join(tmpdir(), "svc-template-apart-"))),
          (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
        )
        const dir = join(root, "templates")
        assert.isUndefined(yield* findTemplate(dir))
        const made = yield* makeTemplateApart(dir)
        assert.isDefined(made)
        assert.strictEqual(made, yield* findTemplate(dir))
        const tar = new Uint8Array(yield* Effect.promise(() => readFile(made!)))
        assert.strictEqual(withoutEntries(tar, new Set([lockFileName])).length, tar.length)
        const store = yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const accounts = yield* sql`SELECT count(*)::int AS n FROM accounts`
          return { ids: yield* migrationIds, accounts }
        }).pipe(Effect.provide(Layer.orDie(PgliteClient.layer({ dataDir: ":memory:", template: made }))))
        assert.deepStrictEqual(store, { ids: yield* expectedIds, accounts: [{ n: 0 }] })

        // A directory that cannot be made (a file stands in its place): no template, and no failure.
        const blocked = join(root, "a-file")
        yield* Effect.promise(() => writeFile(blocked, "not a directory"))
        assert.isUndefined(yield* makeTemplateApart(join(blocked, "templates")))
      }).pipe(Effect.scoped),
    60_000
  )
})
