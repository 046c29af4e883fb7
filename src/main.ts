import { enableCompileCache } from "node:module"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { bundled } from "./bundledStart.ts"
import { startStep } from "./startSteps.ts"
import { cacheStrippedTypes } from "./strippedTypes.ts"

/**
 * `node src/main.ts`. What Node would do at every start is kept between starts, beside the other
 * tools' caches (gone with `node_modules`): the service runs from one bundle of its modules
 * (`bundledStart.ts`), and Node's compile cache keeps the bundle's compiled code
 * (`NODE_COMPILE_CACHE` still picks another place). Without a bundle the modules load one by one,
 * each one's stripped types kept too (`strippedTypes.ts`). The cache must be on before the service's
 * modules load, and static imports would load them before this code runs, so the service is
 * imported dynamically. A bundle made by this start says so, and how long it took (`npm install`
 * makes it beforehand: `scripts/prepareStart.ts`).
 */
const root = fileURLToPath(new URL("../", import.meta.url))
const cache = join(root, "node_modules", ".cache", "svc-start")
enableCompileCache(join(cache, "compiled"))
const bundle = bundled(root, join(root, "src", "launch.ts"), join(cache, "bundle"), () =>
  startStep("building the service bundle (once per change of its modules; `npm install` makes it)")
)
if (bundle !== undefined) {
  await import(bundle.url)
} else {
  cacheStrippedTypes(join(cache, "stripped"))
  await import("./launch.ts")
}
