import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import * as Migrator from "effect/sql/Migrator"
import { AppConfig } from "../config.ts"
import * as PgClient from "./PgClient.ts"
import * as PgliteCheckpoints from "./PgliteCheckpoints.ts"
import * as PgliteClient from "./PgliteClient.ts"
import { findTemplate, isNewStore, makeTemplateApart, templateDir, writeTemplate } from "./PgliteTemplate.ts"

const migrationsDir = fileURLToPath(new URL("../../migrations/", import.meta.url))

/**
 * A migration's statements: split at a `;` that ends a line, except inside a dollar-quoted body
 * (`$$ ... $$`, a function's), whose own statements end lines too.
 */
export const statementsOf = (text: string): ReadonlyArray<string> => {
  const statements: Array<string> = []
  let current: Array<string> = []
  let quoted = false
  for (const line of text.split("\n")) {
    const code = line.replace(/^\s*--.*$/, "")
    current.push(code)
    if ((code.match(/\$\$/g)?.length ?? 0) % 2 === 1) quoted = !quoted
    if (!quoted && /;\s*$/.test(code)) {
      statements.push(current.join("\n").trim().replace(/;$/, ""))
      current = []
    }
  }
  statements.push(current.join("\n").trim())
  return statements.filter((statement) => statement.length > 0)
}

/** `migrations/NNNN_name.sql`, each run statement by statement (PGlite's query path takes one at a time). */
export const loadMigrations: Migrator.Loader = Effect.sync(() =>
  readdirSync(migrationsDir)
    .flatMap((file) => {
      const match = /^(\d+)_(.+)\.sql$/.exec(file)
      return match === null ? [] : [[Number(match[1]), match[2]!, file] as const]
    })
    .sort((a, b) => a[0] - b[0])
    .map(([id, name, file]): Migrator.ResolvedMigration => {
      const statements = statementsOf(readFileSync(`${migrationsDir}${file}`, "utf8"))
      return [
        id,
        name,
        // The loader yields the migration (as an import would); the migrator then runs it.
        Effect.succeed(
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            for (const statement of statements) yield* sql.unsafe(statement)
          })
        )
      ]
    })
)

/** The numbered migrations only: the schema (`runMigrations` applies the functions' file after them). */
export const runNumberedMigrations = Migrator.make({})({ loader: loadMigrations })

/** A file the migrator applies whole whenever its text is new to the database (not numbered). */
export interface Repeatable {
  /** Its name in `svc_repeatable`. */
  readonly name: string
  readonly text: string
}

/** `migrations/functions.sql`: the live text of every function of the schema (the money rule's and the triggers'). */
export const functionsFile = (): Repeatable => ({
  name: "functions.sql",
  text: readFileSync(`${migrationsDir}functions.sql`, "utf8")
})

/**
 * What `applyRepeatable` did: `applied` (a text new to the database), `current` (the text applied
 * last), `superseded` (a text applied before and another since: an older release's, left as it is).
 */
export type RepeatableOutcome = "applied" | "current" | "superseded"

/**
 * Applies `file` in one transaction when its text was never applied to this database, and records
 * its hash. Two instances starting together on one PostgreSQL take turns (a transaction-scoped
 * advisory lock, taken before anything is read); the second finds the text applied. A text applied
 * before is never applied again, so an instance of an older release that starts during a rolling
 * restart does not take the functions back to its text (src/metering/README.md).
 */
export const applyRepeatable = (
  file: Repeatable
): Effect.Effect<RepeatableOutcome, SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const sha256 = createHash("sha256").update(file.text).digest("hex")
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`SELECT pg_advisory_xact_lock(hashtext('svc_repeatable'))`
        const exists = yield* sql`SELECT 1 AS found WHERE to_regclass('svc_repeatable') IS NOT NULL`
        if (exists.length === 0) {
          yield* sql`CREATE TABLE svc_repeatable (name text NOT NULL, sha256 text NOT NULL,
            applied_at timestamptz NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (name, sha256))`
        }
        const applied = yield* sql<{
          sha256: string
        }>`SELECT sha256 FROM svc_repeatable WHERE name = ${file.name}
          ORDER BY applied_at DESC`
        if (applied[0]?.sha256 === sha256) return "current" as const
        if (applied.some((row) => row.sha256 === sha256)) return "superseded" as const
        for (const statement of statementsOf(file.text)) yield* sql.unsafe(statement)
        yield* sql`INSERT INTO svc_repeatable (name, sha256) VALUES (${file.name}, ${sha256})`
        return "applied" as const
      })
    )
  })

/** The numbered migrations, then the functions' file (`functionsFile`); answers the numbered ones applied. */
export const runMigrations = runNumberedMigrations.pipe(
  Effect.tap(() =>
    Effect.suspend(() => applyRepeatable(functionsFile())).pipe(
      Effect.tap((outcome) =>
        outcome === "superseded"
          ? Effect.logWarning(
              "migrations/functions.sql: this text was applied before and another since; the functions are left as they are"
            )
          : Effect.void
      )
    )
  )
)

const seconds = (duration: Duration.Duration) => `${(Duration.toMillis(duration) / 1000).toFixed(1)} s`

/** The migrations run at start-up, said in one line: how many were applied and how long they took. */
const runMigrationsSaid = Effect.timed(runMigrations).pipe(
  Effect.tap(([duration, applied]) =>
    Effect.logInfo(
      applied.length === 0
        ? `migrations: none to apply (${seconds(duration)})`
        : `migrations: ${applied.length} applied, ${applied[0]![0]}-${applied.at(-1)![0]} (${seconds(duration)})`
    )
  )
)

/** The template made for a new store by a process of its own, said as it begins and once done. */
const makeTemplateSaid = Effect.logInfo(
  "creating the PGlite template a new store starts from (initdb and every migration, once per set of migrations; `npm install` makes it)…"
).pipe(
  Effect.andThen(Effect.timed(makeTemplateApart())),
  Effect.tap(([duration, file]) =>
    Effect.logInfo(`PGlite template ${file === undefined ? "not made" : "made"} (${seconds(duration)})`)
  ),
  Effect.map(([, file]) => file)
)

export type Migrated = SqlClient.SqlClient

/** The one SqlClient every service sees, migrated before anything else is built. */
export const layer: Layer.Layer<Migrated, unknown, AppConfig> = Layer.unwrap(
  Effect.map(AppConfig, (config) =>
    Option.match(config.databaseUrl, {
      onNone: () => pglite(config.dataDir),
      onSome: (url) => migrated(PgClient.layer(Redacted.value(url)))
    })
  )
)

/** Any SqlClient layer (a test database, say), migrated. */
export const migrated = <E, R>(
  sqlLayer: Layer.Layer<SqlClient.SqlClient, E, R>
): Layer.Layer<Migrated, unknown, R> =>
  sqlLayer.pipe(Layer.tap((context) => Effect.provide(runMigrationsSaid, context)))

/**
 * A PGlite store at `dataDir`, migrated: from the template at `template` when it is new and one
 * was found, and a new store without one becomes the template (in `templates`) once migrated.
 */
const pgliteStore = (
  dataDir: string | undefined,
  fresh: boolean,
  template: string | undefined,
  templates = templateDir
) =>
  PgliteClient.layer({ dataDir, template }).pipe(
    Layer.tap((context) => Effect.provide(runMigrationsSaid, context)),
    Layer.tap((context) =>
      fresh && template === undefined
        ? writeTemplate(Context.get(context, PgliteClient.PgliteClient).pglite, templates)
        : Effect.void
    )
  )

/**
 * A migrated PGlite store at `dataDir` (see `PgliteClient.Options`). A new one starts from the
 * template of the current migrations (`PgliteTemplate.ts`); when there is none yet, another process
 * makes it first (`makeTemplate.ts`: `initdb` and every migration grow PGlite's memory, which this
 * process would keep for as long as it runs), and only when that fails is the new store migrated
 * here, and kept as the template. It checkpoints as its WAL grows (`PgliteCheckpoints.ts`).
 */
export const pglite = (
  dataDir: string | undefined
): Layer.Layer<Migrated | PgliteClient.PgliteClient, unknown> =>
  Layer.unwrap(
    Effect.gen(function* () {
      const fresh = isNewStore(dataDir)
      const template = fresh ? ((yield* findTemplate()) ?? (yield* makeTemplateSaid)) : undefined
      return PgliteCheckpoints.layer.pipe(Layer.provideMerge(pgliteStore(dataDir, fresh, template)))
    })
  )

/**
 * Makes the template for the current migrations in this process, in `dir`: a new store in memory,
 * migrated and kept (what `makeTemplate.ts` runs in a process of its own). The file, or undefined
 * when it could not be written.
 */
export const makeTemplateHere = (dir: string): Effect.Effect<string | undefined, unknown> =>
  Effect.scoped(Layer.build(pgliteStore(undefined, true, undefined, dir))).pipe(
    Effect.andThen(findTemplate(dir))
  )
