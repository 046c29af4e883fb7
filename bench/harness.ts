import { killAll } from "./proc.ts"

/**
 * What every bench program (`npm run bench`, `storm`, `rolling`) needs around its work: log lines
 * timed from its start and named after it, the clean-ups of what it started (run in reverse, once,
 * each failure logged), and SIGINT/SIGTERM stopping its children and running them before it exits.
 */
export const harness = (name: string, what: string) => {
  const begun = performance.now()
  const log = (line: string) =>
    process.stderr.write(
      `[${name} ${((performance.now() - begun) / 1000).toFixed(0).padStart(4)} s] ${line}\n`
    )
  const cleanups: Array<() => Promise<void>> = []
  const cleanUp = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup()
      } catch (error) {
        log(`clean-up failed: ${String(error)}`)
      }
    }
  }
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping what the ${what} started`)
      killAll()
      void cleanUp().finally(() => process.exit(130))
    })
  }
  return { log, cleanups, cleanUp }
}

/** The run's stamp (`20261125_214805`), naming its results file and its databases. */
export const runStamp = (): string =>
  new Date()
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "")
    .replace("T", "_")
    .toLowerCase()
