import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync
} from "node:fs"
import { isAbsolute, join, relative } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

/**
 * `node src/main.ts` runs the service from one bundle of its modules and Effect's, made by the
 * bundler (rolldown) at the first start and kept in a directory until a module it was made from
 * changes. A bundle holds only the code the service reaches (Effect is a few hundred modules, of
 * which the service uses part), as one module instead of about a thousand: about 30 MB less memory
 * once started, and less CPU per request (no hop between modules on every imported call).
 *
 * The bundle is the same code, not a second copy to keep: it is made from the modules as they are,
 * with their types removed and nothing else rewritten but `import.meta.url` (each module keeps its
 * own, so files found beside a module, the migrations say, are found where they are). Function and
 * class names are kept. The other packages (PGlite, the PostgreSQL driver, the MCP server, ...) are
 * left to Node, loaded from `node_modules` as before, when the code asks for them.
 *
 * A bundle is used when every one of our modules it was made from still has the text it had, and
 * Node, the checkout's place and the installed packages (`node_modules/.package-lock.json`) are
 * the same; otherwise a new one is made, in a process of its own (the bundler's memory is not the
 * service's), in under a second. Starts at the same moment each make their own and the last one
 * written is kept. When no bundle can be had (the bundler is not
 * installed, the directory cannot be written, the bundler fails) or Node runs with source maps
 * (`--enable-source-maps`, to read stack traces in our files), the modules load one by one, as Node
 * loads them.
 */

export interface Bundled {
  /** The bundle's URL, to import. */
  readonly url: string
  /** Whether it was made by this start (false: a kept one, still true to its modules). */
  readonly made: boolean
}

interface Manifest {
  /** What the bundle depends on besides our modules' text. */
  readonly key: string
  /** Its directory, under the cache directory. */
  readonly dir: string
  /** The bundle's entry file in that directory. */
  readonly file: string
  /** Our modules it was made from (paths relative to the project) and the hash of each one's text. */
  readonly inputs: ReadonlyArray<readonly [string, string]>
}

const sha = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex")

const readOr = (file: string): Buffer | undefined => {
  try {
    return readFileSync(file)
  } catch {
    return undefined
  }
}

/**
 * Node, where the project is, what is installed and how bundles are made (this module's text): a
 * bundle made under others is not reused.
 */
const keyOf = (root: string): string =>
  sha(
    [
      process.version,
      sha(readOr(fileURLToPath(import.meta.url)) ?? ""),
      process.arch,
      root,
      sha(
        readOr(join(root, "node_modules", ".package-lock.json")) ??
          readOr(join(root, "package-lock.json")) ??
          ""
      )
    ].join("\n")
  )

const manifestFile = (cacheDir: string) => join(cacheDir, "manifest.json")

/** The kept bundle's entry file, when each of its modules still has the text it was made from. */
const kept = (root: string, cacheDir: string, key: string): string | undefined => {
  let manifest: Manifest
  try {
    manifest = JSON.parse(readFileSync(manifestFile(cacheDir), "utf8")) as Manifest
  } catch {
    return undefined
  }
  if (manifest.key !== key) return undefined
  for (const [file, digest] of manifest.inputs) {
    const text = readOr(join(root, file))
    if (text === undefined || sha(text) !== digest) return undefined
  }
  const entry = join(cacheDir, manifest.dir, manifest.file)
  return existsSync(entry) ? entry : undefined
}

/** Bundled: our modules and Effect's (and rolldown's helpers); every other package stays Node's. */
const bundledHere = (id: string) =>
  id.startsWith(".") ||
  isAbsolute(id) ||
  id.startsWith("\0") ||
  id === "effect" ||
  id.startsWith("effect/") ||
  id.startsWith("@effect/") ||
  id.startsWith("@oxc-project/runtime/")

/**
 * A made bundle older than this that the manifest no longer names is removed. A process started
 * from it may still be running (the old instances of a rolling restart, say) and load one of its
 * chunks the first time a setting's module is needed, so it is kept long after any such start.
 */
const staleAfterMs = 7 * 24 * 60 * 60 * 1000

const removeStale = (cacheDir: string, current: string) => {
  for (const name of readdirSync(cacheDir)) {
    if (name === current || name === "manifest.json") continue
    const path = join(cacheDir, name)
    try {
      if (Date.now() - statSync(path).mtimeMs > staleAfterMs) rmSync(path, { recursive: true, force: true })
    } catch {
      // Gone already, or not ours to remove: left.
    }
  }
}

const make = async (root: string, entry: string, cacheDir: string, key: string): Promise<string> => {
  const { rolldown } = await import("rolldown")
  const dir = `${Date.now().toString(36)}-${process.pid}`
  const bundle = await rolldown({
    input: entry,
    // Paths in the bundle's comments (each module's code starts with \`// <its path>\`) from here.
    cwd: root,
    platform: "node",
    external: (id) => !bundledHere(id),
    transform: { target: "esnext" },
    treeshake: true,
    logLevel: "silent",
    plugins: [
      {
        name: "svc:import-meta-url",
        transform(code, id) {
          if (!code.includes("import.meta.url")) return undefined
          return code.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(id).href))
        }
      }
    ]
  })
  try {
    const { output } = await bundle.write({
      dir: join(cacheDir, dir),
      format: "esm",
      keepNames: true,
      // The bundle's text stays in the heap as long as the service runs (V8 compiles functions
      // lazily from it): without comments, and in ASCII so that V8 keeps it at one byte a character.
      comments: false,
      charset: "ascii",
      // For reading a profile in our files (the bench's); Node reads it only with source maps on,
      // and then runs the modules one by one instead.
      sourcemap: true,
      sourcemapExcludeSources: true
    })
    const inputs = new Map<string, string>()
    for (const item of output) {
      if (item.type !== "chunk") continue
      for (const id of item.moduleIds) {
        if (!isAbsolute(id)) continue
        const file = relative(root, id)
        if (file.startsWith("..") || file.split(/[\\/]/).includes("node_modules")) continue
        const text = readOr(id)
        if (text !== undefined) inputs.set(file, sha(text))
      }
    }
    const main = output.find((item) => item.type === "chunk" && item.isEntry)
    if (main === undefined) throw new Error("the bundle has no entry chunk")
    const manifest: Manifest = { key, dir, file: main.fileName, inputs: [...inputs].sort() }
    const partial = `${manifestFile(cacheDir)}.${process.pid}.partial`
    writeFileSync(partial, JSON.stringify(manifest))
    renameSync(partial, manifestFile(cacheDir))
    removeStale(cacheDir, dir)
    return join(cacheDir, dir, main.fileName)
  } finally {
    await bundle.close()
  }
}

/** How long a start waits for its bundle before it loads the modules one by one. */
const makeTimeoutMs = 120_000

/**
 * The bundle of `entry` (a module of the project at `root`) kept in `cacheDir`, made when there is
 * none true to its modules; `undefined` when none can be had (the modules then load as they are).
 * `onMake` is called as a bundle begins to be made, and what it returns once that is over (with
 * what came of it when no bundle was made).
 */
export const bundled = (
  root: string,
  entry: string,
  cacheDir: string,
  onMake: () => (outcome?: string) => void = () => () => {}
): Bundled | undefined => {
  if (process.sourceMapsEnabled) return undefined
  const key = keyOf(root)
  const found = kept(root, cacheDir, key)
  if (found !== undefined) return { url: pathToFileURL(found).href, made: false }
  const done = onMake()
  const made = spawnSync(process.execPath, [fileURLToPath(import.meta.url), root, entry, cacheDir], {
    stdio: "ignore",
    timeout: makeTimeoutMs
  })
  const fresh = made.status === 0 ? kept(root, cacheDir, key) : undefined
  done(fresh === undefined ? "none made: the modules load one by one" : undefined)
  return fresh === undefined ? undefined : { url: pathToFileURL(fresh).href, made: true }
}

// `node bundledStart.ts <root> <entry> <cacheDir>`: makes the bundle (what `bundled` runs).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [root, entry, cacheDir] = process.argv.slice(2) as [string, string, string]
  mkdirSync(cacheDir, { recursive: true })
  await make(root, entry, cacheDir, keyOf(root))
}
