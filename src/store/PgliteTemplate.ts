import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { PGlite } from "@electric-sql/pglite"
import { Effect } from "effect"

/**
 * A new PGlite store starts from a template: a migrated, empty data directory kept as a tar file,
 * loaded in a fraction of the time `initdb` and every migration take. The template is made by the
 * first new store that had none (right after its migrations) and named by what it depends on, the
 * PGlite version and the migrations' text, so a changed migration or an upgraded PGlite makes a new
 * one and the old is removed. A template that cannot be read or written changes nothing but speed.
 */

const projectRoot = fileURLToPath(new URL("../../", import.meta.url))
const migrationsDir = join(projectRoot, "migrations")
/** Beside the other tools' caches, gone with `node_modules`. */
export const templateDir = join(projectRoot, "node_modules", ".cache", "svc-pglite")

const pgliteVersion = (): string => {
  try {
    const manifest = join(projectRoot, "node_modules", "@electric-sql", "pglite", "package.json")
    return String(JSON.parse(readFileSync(manifest, "utf8")).version)
  } catch {
    return "unknown"
  }
}

/** What the template depends on, hashed: the PGlite version, each migration's name and text. */
const templateName = (): string => {
  const hash = createHash("sha256").update(`pglite ${pgliteVersion()}\n`)
  for (const file of readdirSync(migrationsDir)
    .filter((name) => name.endsWith(".sql"))
    .sort()) {
    hash
      .update(`${file}\n`)
      .update(readFileSync(join(migrationsDir, file)))
      .update("\n")
  }
  return `template-${hash.digest("hex").slice(0, 16)}.tar`
}

/** True when `dataDir` holds no database yet (in memory, or a directory without `PG_VERSION`). */
export const isNewStore = (dataDir: string | undefined): boolean => {
  if (dataDir === undefined || dataDir === ":memory:" || dataDir.startsWith("memory://")) return true
  // Another kind of URL (`idb://`, say) is PGlite's to look into.
  if (dataDir.includes("://")) return false
  return !existsSync(join(dataDir, "PG_VERSION"))
}

/** The template for the current migrations, when one was made. */
export const readTemplate: Effect.Effect<Blob | undefined> = Effect.promise(async () => {
  try {
    return new Blob([await readFile(join(templateDir, templateName()))])
  } catch {
    return undefined
  }
})

/**
 * Keeps `pglite`'s data directory (freshly migrated, nothing else written yet) as the template,
 * written to a temporary file and renamed, so a store starting at the same moment reads a whole
 * template or none. Older templates are removed.
 */
export const writeTemplate = (pglite: PGlite): Effect.Effect<void> =>
  Effect.promise(async () => {
    const name = templateName()
    const dump = await pglite.dumpDataDir("none")
    await mkdir(templateDir, { recursive: true })
    const partial = join(templateDir, `${name}.${process.pid}.${Date.now()}.partial`)
    await writeFile(partial, new Uint8Array(await dump.arrayBuffer()))
    await rename(partial, join(templateDir, name))
    for (const other of readdirSync(templateDir)) {
      if (other !== name && other.startsWith("template-") && other.endsWith(".tar")) {
        await rm(join(templateDir, other), { force: true })
      }
    }
  }).pipe(
    Effect.catchDefect((defect) =>
      Effect.logDebug("PGlite template not written; the next new store runs initdb again", defect)
    )
  )
