import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs"
import { join } from "node:path"
import { templateDir } from "../src/store/PgliteTemplate.ts"
import { benchDir } from "./proc.ts"
import { startService } from "./service.ts"

/** Timed starts per kind; the median is reported beside each. */
const runs = 3

/** /readyz is polled this often: the 200 ms of `startNode`'s default would be most of a PGlite start. */
const pollMs = 20

export interface StartupResult {
  readonly kind: string
  /** Spawn of `node src/main.ts` to its first 200 from /readyz, per start, in ms. */
  readonly runsMs: ReadonlyArray<number>
  readonly medianMs: number
  /** The service's peak RSS (VmHWM) once ready, per start, in MiB: what starting took at most. */
  readonly peakRssMb: ReadonlyArray<number>
  readonly note?: string | undefined
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

const hasTemplate = () =>
  existsSync(templateDir) &&
  readdirSync(templateDir).some((name) => name.startsWith("template-") && name.endsWith(".tar"))

interface Start {
  readonly ms: number
  readonly peakRssMb: number
}

/** One start of the service, stopped again once ready: the time to ready, and its peak RSS then. */
const timedStart = async (
  label: string,
  target: { databaseUrl: string } | { dataDir: string }
): Promise<Start> => {
  const service = await startService({
    label,
    pollMs,
    ...("databaseUrl" in target
      ? { store: "postgres", databaseUrl: target.databaseUrl }
      : { store: "pglite", dataDir: target.dataDir })
  })
  const ms = service.readyAt - service.spawnedAt
  const peakRssMb = service.memory()?.peakMb ?? Number.NaN
  await service.stop()
  return { ms, peakRssMb }
}

const series = async (
  kind: string,
  start: (i: number) => Promise<Start>,
  log: (line: string) => void,
  note?: string
): Promise<StartupResult> => {
  const starts: Array<Start> = []
  for (let i = 0; i < runs; i++) starts.push(await start(i))
  const runsMs = starts.map((one) => one.ms)
  const peakRssMb = starts.map((one) => one.peakRssMb)
  const result = { kind, runsMs, medianMs: median(runsMs), peakRssMb, note }
  log(
    `start-up: ${kind}: median ${result.medianMs.toFixed(0)} ms (${runsMs.map((ms) => ms.toFixed(0)).join(", ")}), peak RSS ${peakRssMb.map((mb) => mb.toFixed(0)).join(", ")} MiB`
  )
  return result
}

/**
 * How long the service takes from spawn to ready: on a migrated PostgreSQL database, on an existing
 * PGlite directory, and on a new PGlite directory with and without the template of a migrated one
 * (src/store/PgliteTemplate.ts). Each kind gets one untimed start first where it needs one (to
 * migrate the database, to create the directory), then `runs` timed ones.
 *
 * `defer` registers a clean-up that must happen even if the bench is interrupted: the template
 * directory is moved aside for the starts without it and always moved back.
 */
export const measureStartup = async (options: {
  readonly databaseUrl: string | undefined
  readonly stamp: string
  readonly log: (line: string) => void
  readonly defer: (cleanup: () => Promise<void>) => void
}): Promise<ReadonlyArray<StartupResult>> => {
  const { log, stamp } = options
  const results: Array<StartupResult> = []
  if (options.databaseUrl !== undefined) {
    const databaseUrl = options.databaseUrl
    log("start-up: PostgreSQL, migrating a fresh database first")
    await timedStart(`startup-${stamp}-pg-migrate`, { databaseUrl })
    results.push(
      await series(
        "PostgreSQL, database already migrated",
        (i) => timedStart(`startup-${stamp}-pg-${i + 1}`, { databaseUrl }),
        log
      )
    )
  }
  mkdirSync(benchDir, { recursive: true })
  const dir = mkdtempSync(join(benchDir, "startup-"))
  try {
    const existing = join(dir, "existing")
    log("start-up: PGlite, creating a data directory first")
    await timedStart(`startup-${stamp}-pglite-create`, { dataDir: existing })
    results.push(
      await series(
        "PGlite, existing data directory",
        (i) => timedStart(`startup-${stamp}-pglite-existing-${i + 1}`, { dataDir: existing }),
        log
      )
    )
    const templated = hasTemplate()
    results.push(
      await series(
        "PGlite, new data directory, template present",
        (i) => timedStart(`startup-${stamp}-pglite-new-${i + 1}`, { dataDir: join(dir, `new-${i + 1}`) }),
        log,
        templated ? undefined : `no template in ${templateDir}: the service could not write one`
      )
    )
    // Without the template: each start writes a new one (before it is ready), removed before the next.
    const aside = `${templateDir}.bench-aside-${stamp}`
    let restored = false
    const restore = async () => {
      if (restored) return
      restored = true
      if (existsSync(aside)) {
        rmSync(templateDir, { recursive: true, force: true })
        renameSync(aside, templateDir)
      }
    }
    options.defer(restore)
    if (existsSync(templateDir)) renameSync(templateDir, aside)
    try {
      results.push(
        await series(
          "PGlite, new data directory, no template (initdb and every migration)",
          (i) => {
            rmSync(templateDir, { recursive: true, force: true })
            return timedStart(`startup-${stamp}-pglite-bare-${i + 1}`, {
              dataDir: join(dir, `bare-${i + 1}`)
            })
          },
          log,
          "includes making the template, in a process of its own"
        )
      )
    } finally {
      await restore()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return results
}
