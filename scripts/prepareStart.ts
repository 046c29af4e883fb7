/**
 * `npm install` runs this (`postinstall`): it makes beforehand what the first `npm start` would
 * otherwise make, the bundle the service runs from (`src/bundledStart.ts`) and the template a new
 * PGlite store starts from (`src/store/PgliteTemplate.ts`), each in `node_modules/.cache/` and said
 * in one line with its time. Both are kept until what they are made from changes, and a start makes
 * again whichever is missing or stale, so nothing here can fail an install: a step that fails is said
 * and left to the first start.
 */
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { bundled } from "../src/bundledStart.ts"
import { startStep } from "../src/startSteps.ts"
import { findTemplate, templateDir } from "../src/store/PgliteTemplate.ts"

const root = fileURLToPath(new URL("../", import.meta.url))

try {
  const bundle = bundled(root, join(root, "src", "launch.ts"), join(root, "node_modules", ".cache", "svc-start", "bundle"), () =>
    startStep("building the service bundle `npm start` runs from")
  )
  if (bundle !== undefined && !bundle.made) process.stderr.write("the service bundle is up to date\n")
} catch (error) {
  process.stderr.write(`the service bundle was not made (the first start makes it): ${String(error)}\n`)
}

try {
  if (Effect.runSync(findTemplate()) !== undefined) {
    process.stderr.write("the PGlite template is up to date\n")
  } else {
    const done = startStep("creating the PGlite template a new store starts from (initdb and every migration)")
    const made = spawnSync(process.execPath, [join(root, "src", "store", "makeTemplate.ts"), templateDir], {
      stdio: ["ignore", "ignore", "pipe"],
      encoding: "utf8"
    })
    done(made.status === 0 ? undefined : `not made, the first start makes it: ${made.stderr.slice(-500)}`)
  }
} catch (error) {
  process.stderr.write(`the PGlite template was not made (the first start makes it): ${String(error)}\n`)
}
