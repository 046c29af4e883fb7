import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { mkdir, rename, rm, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { MemoryFS, PGlite } from "@electric-sql/pglite"
import { Effect } from "effect"
import { lockFileName } from "./DataDirLock.ts"
import { readTar, withoutEntries } from "./tar.ts"

/**
 * A new PGlite store starts from a template: a migrated, empty data directory kept as a tar file,
 * loaded in a fraction of the time `initdb` and every migration take. The first new store that
 * finds none has one made, in a process of its own (`makeTemplateApart`), and it is named by what it
 * depends on, the PGlite version and the migrations' text, so a changed migration or an upgraded
 * PGlite makes a new one and the old is removed. A template that cannot be made, read or written
 * changes nothing but speed and memory: the new store is then migrated in the service's process.
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

/**
 * How templates are made; a change here makes a new one. 2: without the service's lock file (a
 * template holding its maker's lock overwrote the lock of every store made from it).
 */
const templateFormat = 2

/** What the template depends on, hashed: its format, the PGlite version, each migration's name and text. */
const templateName = (): string => {
  const hash = createHash("sha256").update(`format ${templateFormat}\npglite ${pgliteVersion()}\n`)
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

/** The file of the template for the current migrations in `dir`, when one was made. */
export const findTemplate = (dir = templateDir): Effect.Effect<string | undefined> =>
  Effect.sync(() => {
    const file = join(dir, templateName())
    return existsSync(file) ? file : undefined
  })

/** The program that makes a template in a process of its own (`node makeTemplate.ts <dir>`). */
const maker = fileURLToPath(new URL("./makeTemplate.ts", import.meta.url))

/**
 * Makes the template for the current migrations in `dir` in a process of its own, and its file, or
 * undefined when none could be made. `initdb` and the migrations take a new PGlite's WebAssembly
 * memory and V8's compiled code of it to several times what a store loaded from a template holds,
 * and that memory is never given back: a first start that made it in the service's process peaked at
 * 683-687 MiB and still held 497-508 once ready, against 263-270 with the maker apart (about 0.4 s
 * more to start). The maker's process exits with it.
 */
export const makeTemplateApart = (dir = templateDir): Effect.Effect<string | undefined> =>
  Effect.callback<string | undefined>((resume) => {
    const child = execFile(
      process.execPath,
      [maker, dir],
      { encoding: "utf8", maxBuffer: 1 << 20 },
      (error, _stdout, stderr) => {
        if (error === null) {
          resume(findTemplate(dir))
          return
        }
        resume(
          Effect.as(
            Effect.logWarning(
              "PGlite template not made in a process of its own: the new store runs initdb and every migration in this one",
              stderr.slice(-2000)
            ),
            undefined
          )
        )
      }
    )
    return Effect.sync(() => child.kill())
  })

/**
 * Unpacks the template at `file` into `dataDir`, a new store's directory whose lock is taken: what
 * PGlite's `loadDataDir` would do, but straight to disk and one file in memory at a time (PGlite
 * reads the whole archive, copies every file out of it and keeps its options, archive included,
 * while it runs). `PG_VERSION`, which makes the directory a store, is written last, so unpacking
 * cut short leaves a directory that is still new.
 */
export const unpackTemplate = (file: string, dataDir: string): void => {
  // As PGlite refuses to load an archive over a store; a URL is PGlite's to open, not a path.
  if (dataDir.includes("://")) throw new Error(`A template is unpacked into a directory path, not ${dataDir}`)
  if (!isNewStore(dataDir)) throw new Error(`${dataDir} holds a store already; a template makes new ones`)
  let version: Uint8Array | undefined
  readTar(file, (entry, data) => {
    if (entry.path === "" || entry.path === lockFileName) return
    const target = join(dataDir, entry.path)
    if (entry.kind === "directory") mkdirSync(target, { recursive: true })
    if (entry.kind !== "file") return
    if (entry.path === "PG_VERSION") {
      version = data()
      return
    }
    mkdirSync(dirname(target), { recursive: true })
    writeFileSync(target, data())
  })
  if (version === undefined) throw new Error(`${file} is not a PGlite data directory: no PG_VERSION`)
  writeFileSync(join(dataDir, "PG_VERSION"), version)
}

type EmscriptenOptions = Parameters<MemoryFS["init"]>[1]
type PreRun = NonNullable<EmscriptenOptions["preRun"]>[number]

/**
 * An in-memory filesystem for PGlite that starts as the template at `file`: unpacked into
 * PGlite's own files before PostgreSQL starts, each file's data read once into the buffer the
 * file then keeps (for `loadDataDir`, PGlite would hold the archive and two copies of each file).
 */
export const templateMemoryFs = (
  pglite: { readonly MemoryFS: typeof MemoryFS; readonly PGlite: typeof PGlite },
  file: string
): MemoryFS => {
  class TemplateMemoryFS extends pglite.MemoryFS {
    override async init(pg: PGlite, emscriptenOptions: EmscriptenOptions) {
      const { emscriptenOpts } = await super.init(pg, emscriptenOptions)
      const unpack: PreRun = (mod) => {
        const root = pglite.PGlite.paths.PGDATA
        readTar(file, (entry, data) => {
          if (entry.path === "" || entry.path === lockFileName) return
          const target = `${root}/${entry.path}`
          if (entry.kind === "directory") mod.FS.mkdirTree(target)
          if (entry.kind !== "file") return
          mod.FS.mkdirTree(target.slice(0, target.lastIndexOf("/")))
          mod.FS.writeFile(target, data(), { canOwn: true })
        })
      }
      return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), unpack] } }
    }
  }
  return new TemplateMemoryFS()
}

/**
 * Keeps `pglite`'s data directory (freshly migrated, nothing else written yet) as the template in `dir`,
 * written to a temporary file and renamed, so a store starting at the same moment reads a whole
 * template or none. Older templates are removed.
 */
export const writeTemplate = (pglite: PGlite, dir = templateDir): Effect.Effect<void> =>
  Effect.promise(async () => {
    const name = templateName()
    const dump = await pglite.dumpDataDir("none")
    // The maker's lock is no part of a store: a new store holds its own, taken before it loads this.
    const tar = withoutEntries(new Uint8Array(await dump.arrayBuffer()), new Set([lockFileName]))
    await mkdir(dir, { recursive: true })
    const partial = join(dir, `${name}.${process.pid}.${Date.now()}.partial`)
    await writeFile(partial, tar)
    await rename(partial, join(dir, name))
    for (const other of readdirSync(dir)) {
      if (other !== name && other.startsWith("template-") && other.endsWith(".tar")) {
        await rm(join(dir, other), { force: true })
      }
    }
  }).pipe(
    Effect.catchDefect((defect) =>
      Effect.logDebug("PGlite template not written; the next new store runs initdb again", defect)
    )
  )
