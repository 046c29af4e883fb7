/**
 * `node src/store/makeTemplate.ts <dir>`: makes the PGlite template for the current migrations in
 * `dir` and exits, 0 once it is written (`makeTemplateApart` in `PgliteTemplate.ts` runs this, so
 * that a service never holds the memory `initdb` and the migrations take).
 */
import { Effect } from "effect"
import { makeTemplateHere } from "./Database.ts"

const dir = process.argv[2]
if (dir === undefined) throw new Error("usage: node src/store/makeTemplate.ts <dir>")
const file = await Effect.runPromise(makeTemplateHere(dir))
if (file === undefined) {
  process.stderr.write(`no template written in ${dir}\n`)
  process.exitCode = 1
}
