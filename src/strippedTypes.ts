import { createHash } from "node:crypto"
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { type LoadHookSync, registerHooks, stripTypeScriptTypes } from "node:module"
import { join } from "node:path"

/**
 * Node strips the types of every `.ts` module it loads, at every start: for this service a tenth of
 * a second, in a WebAssembly parser whose memory stays grown afterwards (about 30 MB). These hooks
 * keep each module's stripped text in a directory, under the module's URL with the hash of its
 * text, and hand Node that text on the next start. It is the text Node itself makes
 * (`stripTypeScriptTypes` is its stripping, with the `sourceURL` comment it adds), so the modules,
 * their stack traces and their errors are unchanged; a module that does not strip is left to Node.
 * A cache that cannot be read or written changes nothing but speed.
 */

const sha = (text: string) => createHash("sha256").update(text).digest("hex")

/** What the stripped text depends on besides the module's own text: Node's parser. */
const parser = `${process.version} ${process.arch}`

/** Node decodes a module's bytes this way before stripping them. */
const decoder = new TextDecoder()

/** `stripTypeScriptTypes` warns once that it is experimental; Node's own stripping does not. */
const quietly = <A>(f: () => A): A => {
  const emitWarning = process.emitWarning
  process.emitWarning = () => {}
  try {
    return f()
  } finally {
    process.emitWarning = emitWarning
  }
}

const readEntry = (file: string, digest: string): string | undefined => {
  try {
    const text = readFileSync(file, "utf8")
    const header = `// ${digest}\n`
    return text.startsWith(header) ? text.slice(header.length) : undefined
  } catch {
    return undefined
  }
}

const writeEntry = (file: string, digest: string, code: string) => {
  try {
    // Renamed into place, so a start at the same moment reads a whole entry or none.
    const partial = `${file}.${process.pid}.partial`
    writeFileSync(partial, `// ${digest}\n${code}`)
    renameSync(partial, file)
  } catch {
    // Read-only or full: the next start strips again.
  }
}

const load =
  (dir: string): LoadHookSync =>
  (url, context, nextLoad) => {
    const loaded = nextLoad(url, context)
    if (loaded.format !== "module-typescript" || loaded.source === undefined) return loaded
    const source = typeof loaded.source === "string" ? loaded.source : decoder.decode(loaded.source)
    const file = join(dir, `${sha(url).slice(0, 32)}.js`)
    const digest = sha(`${parser}\n${source}`)
    const kept = readEntry(file, digest)
    if (kept !== undefined) return { ...loaded, format: "module", source: kept }
    let code: string
    try {
      code = quietly(() => stripTypeScriptTypes(source, { mode: "strip", sourceUrl: url }))
    } catch {
      // Invalid TypeScript: Node strips it again and reports the error as it always does.
      return loaded
    }
    writeEntry(file, digest, code)
    return { ...loaded, format: "module", source: code }
  }

/**
 * Serves stripped `.ts` modules from `dir` from now on. Only where Node strips the way
 * `stripTypeScriptTypes` does: plain stripping, no source maps.
 */
export const cacheStrippedTypes = (dir: string): void => {
  if (process.features.typescript !== "strip" || process.sourceMapsEnabled) return
  try {
    mkdirSync(dir, { recursive: true })
  } catch {
    return
  }
  registerHooks({ load: load(dir) })
}
