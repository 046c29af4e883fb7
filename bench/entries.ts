import { randomInt } from "node:crypto"
import { readFileSync } from "node:fs"

/** What a Node load generator of the bench is given (as JSON, its one argument). */
export interface RunnerSpec {
  readonly url: string
  readonly method: "GET" | "POST"
  /** The prepared requests (see `readEntries`). */
  readonly file: string
  readonly duration: number
  readonly connections: number
}

/** One request of a load generator's file (see `writeEntries` in load.ts). */
export interface FileEntry {
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: string
}

/** The prepared requests: path TAB headers TAB body per line, headers "Name: value" joined by \x1e. */
export const readEntries = (file: string): ReadonlyArray<FileEntry> =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => {
      const [path = "/", headerText = "", body = ""] = line.split("\t")
      const headers = Object.fromEntries(
        headerText
          .split("\x1e")
          .filter((pair) => pair.length > 0)
          .map((pair) => {
            const at = pair.indexOf(":")
            return [pair.slice(0, at), pair.slice(at + 1).trim()]
          })
      )
      return { path, headers, body }
    })

/** The `n`th request with its `{{IDEM}}` filled in: a key no other request of the run has. */
export const entryFor = (entries: ReadonlyArray<FileEntry>, n: number) => {
  const entry = entries[n % entries.length]!
  const idem = `ld-${n}-${randomInt(1_000_000_000)}`
  const headers = Object.fromEntries(
    Object.entries(entry.headers).map(([name, value]) => [name, value.replaceAll("{{IDEM}}", idem)])
  )
  return { path: entry.path, headers, body: entry.body.replaceAll("{{IDEM}}", idem) }
}
