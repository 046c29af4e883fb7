import { enableCompileCache } from "node:module"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { cacheStrippedTypes } from "./strippedTypes.ts"

/**
 * `node src/main.ts`. Loading modules is most of start-up, so what Node does to each module at
 * every start is kept between starts, beside the other tools' caches (gone with `node_modules`):
 * its compiled code (Node's compile cache; `NODE_COMPILE_CACHE` still picks another place) and,
 * for ours, its stripped types (`strippedTypes.ts`). Both must be on before the service's modules
 * load, and static imports would load them before this code runs, so the service is imported
 * dynamically.
 */
const cache = fileURLToPath(new URL("../node_modules/.cache/svc-start/", import.meta.url))
enableCompileCache(join(cache, "compiled"))
cacheStrippedTypes(join(cache, "stripped"))

await import("./launch.ts")
