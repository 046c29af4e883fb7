/**
 * The tools package (`tools/package.json`, its own lockfile): Lighthouse, the MCP Inspector and
 * conformance suite, Redocly and Spectral, which only some CI stages use and the root install
 * leaves out. `npm --prefix tools install` brings them (the npm scripts that use them run it first).
 */
import { existsSync } from "node:fs"
import { join } from "node:path"

export const toolsDir = join(import.meta.dirname, "../../tools")

/** A file of an installed tool, e.g. `lighthouse/core/index.js` or `.bin/redocly`. */
export const toolPath = (file: string): string => {
  const path = join(toolsDir, "node_modules", file)
  if (!existsSync(path))
    throw new Error(`${file} is not installed: run \`npm --prefix tools install\` (see tools/package.json)`)
  return path
}
