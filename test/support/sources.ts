import { readdirSync } from "node:fs"
import { join } from "node:path"

/** Every `.ts` file below `folder`, for the tests that read the code itself. */
export const filesUnder = (folder: string): Array<string> =>
  readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? filesUnder(join(folder, entry.name))
      : entry.name.endsWith(".ts")
        ? [join(folder, entry.name)]
        : []
  )
