// `npm run bench`: starts what it measures, measures, stops it, prints a table and writes it to
// .bench/results-<timestamp>.json. See README.md, "Benchmarks".
import { mkdirSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { join } from "node:path"
import { checkoutReport, compareCheckouts } from "./against.ts"
import { type Calibration, calibrate, calibrationLine } from "./calibration.ts"
import {
  type AllocationProfileResult,
  allocationProfileStore,
  type CaseResult,
  errorsOf,
  measureStore,
  type ProfileResult,
  profileStore,
  type StoreResult,
  warmUp
} from "./cases.ts"
import { compareMetrics, comparisonReport } from "./compareMetrics.ts"
import { harness, runStamp } from "./harness.ts"
import { type LoadResult, requestsSent, runLoad } from "./load.ts"
import { residentPartsLine } from "./memoryMap.ts"
import { type Options, parseOptions, usage } from "./options.ts"
import { createBenchDatabase, pgSession } from "./pg.ts"
import { type PgbenchResult, runPgbench, serviceConnections } from "./pgbench.ts"
import { benchDir, cpuUsBetween, freePort, has, serviceEnv, startNode } from "./proc.ts"
import { type Reference, referenceServers } from "./reference.ts"
import {
  allocationTable,
  ledgerLines,
  linesTable,
  loadTable,
  medianTable,
  pgbenchLines,
  roundTripTable,
  soakReport,
  startupTable,
  targetsOf,
  targetsTable
} from "./report.ts"
import { median, met, summarise } from "./rounds.ts"
import { countRoundTrips, type RoundTrips } from "./roundtrips.ts"
import { type Store, startService } from "./service.ts"
import { soak } from "./soak.ts"
import { measureStartup, type StartupResult } from "./startup.ts"

const { log, cleanups, cleanUp } = harness("bench", "bench")

const machine = () => ({
  cores: cpus().length,
  cpu: cpus()[0]?.model ?? "unknown",
  node: process.version,
  loadavg: loadavg().map((n) => Number(n.toFixed(2))),
  pinned: has.taskset ? "server on core 0, load generator on core 1 (taskset)" : "not pinned (no taskset)"
})

/**
 * A reference server under the same load; with `rate`, at that fixed rate through the half-rate
 * row's runner instead: the latency the runner itself adds (its floor).
 */
const baseline = async (
  options: Options,
  tool: "wrk" | "autocannon",
  rate?: number,
  reference: Reference = "node:http"
): Promise<{
  readonly load: LoadResult
  readonly cpuUsPerRequest: number | undefined
  readonly warmUpRps: number | undefined
}> => {
  const port = await freePort()
  const server = await startNode({
    label: "baseline",
    args: [referenceServers[reference], String(port)],
    port,
    readyPath: "/",
    env: serviceEnv({})
  })
  const root = { method: "GET", entries: [{ path: "/", headers: {} }] } as const
  try {
    // Warmed as each case is (`--warmup`); at a fixed rate by the runner itself, at that rate.
    const warm =
      rate === undefined ? await warmUp(server, "baseline", root, options.warmup, options, tool) : undefined
    const cpuBefore = server.cpuUs()
    const load = await runLoad({
      label: "baseline",
      baseUrl: server.url,
      ...root,
      duration: options.duration,
      connections: options.connections,
      tool,
      countStatuses: false,
      rate,
      warmup: options.warmup
    })
    const cpuAfter = server.cpuUs()
    // At a fixed rate the CPU was counted over the runner's warm-up too.
    const sent = requestsSent(load, rate, options.warmup)
    return {
      load,
      cpuUsPerRequest: cpuUsBetween(cpuBefore, cpuAfter, sent),
      warmUpRps: warm?.rps
    }
  } finally {
    await server.stop()
  }
}

/** The database the run measures PostgreSQL in (or another of its steps), dropped when the run ends. */
const benchDatabase = async (options: Options, stamp: string, prefix?: string) => {
  if (options.pg === undefined) return undefined
  const database = await createBenchDatabase(options.pg, stamp, prefix)
  cleanups.push(database.drop)
  log(`postgres: created ${database.name}`)
  return database
}

/** Its own step before the load: the starts would otherwise share the machine with a load case. */
const startup = async (options: Options, stamp: string): Promise<ReadonlyArray<StartupResult>> => {
  const database = await benchDatabase(options, stamp, "svc_startup")
  try {
    return await measureStartup({
      databaseUrl: database?.url,
      stamp,
      log,
      defer: (cleanup) => cleanups.push(cleanup)
    })
  } finally {
    // Dropped now (and again, harmlessly, at the end): the load cases need none of it.
    await database?.drop()
  }
}

/**
 * PostgreSQL's own write limit, as many clients as the service has connections, on a database of its
 * own, `--rounds` times; with `rate` (the cache hit's half-rate row's) a single-row commit's latency at
 * that fixed rate, and from as many sessions as the load's connections.
 */
const pgbench = async (
  options: Options,
  stamp: string,
  rate?: number
): Promise<PgbenchResult | undefined> => {
  if (!has.pgbench) {
    log("pgbench not found: PostgreSQL's own limit not measured (apt-get install -y postgresql-client)")
    return undefined
  }
  const database = await benchDatabase(options, stamp, "svc_pgbench")
  if (database === undefined) return undefined
  try {
    return await runPgbench(database, options.duration, serviceConnections, log, {
      rate,
      loadConnections: options.connections,
      rounds: options.rounds
    })
  } finally {
    await database.drop()
  }
}

const write = (stamp: string, result: object) => {
  mkdirSync(benchDir, { recursive: true })
  const file = join(benchDir, `results-${stamp}.json`)
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`)
  return file
}

const runSoak = async (options: Options, seconds: number, stamp: string) => {
  const database = await benchDatabase(options, stamp)
  const service = await startService({
    label: "soak",
    store: database === undefined ? "pglite" : "postgres",
    databaseUrl: database?.url
  })
  cleanups.push(service.stop)
  const db = database === undefined ? undefined : pgSession(database.url)
  if (db !== undefined) cleanups.push(db.close)
  log(`soak: ${service.store} service up (pid ${service.pid}) for ${seconds} s`)
  const result = await soak({
    service,
    seconds,
    workers: Math.min(options.connections, options.accounts),
    accounts: options.accounts,
    db,
    log
  })
  const file = write(stamp, { kind: "soak", machine: machine(), options, soak: result })
  process.stdout.write(`\n${soakReport(result)}\n\nwritten to ${file}\n`)
  return result.pass
}

/**
 * The machine at the end of a run: what the results file keeps (the start's description, the load
 * average at the end, the JavaScript calibration before and after) and the report's closing lines.
 */
const machineAtEnd = (
  start: ReturnType<typeof machine>,
  startCalibration: Calibration,
  endCalibration: Calibration
) => {
  const loadavgAtEnd = machine().loadavg
  return {
    record: { ...start, loadavgAtEnd, calibration: { start: startCalibration, end: endCalibration } },
    lines: [
      `machine: ${start.cores} cores (${start.cpu}), ${start.pinned}, load average ${start.loadavg.join(" ")} at the start, ${loadavgAtEnd.join(" ")} at the end`,
      calibrationLine(startCalibration, endCalibration)
    ]
  }
}

/** A comparison's results written to .bench/, and its report printed with the machine's load over the run. */
const comparisonDone = async (
  stamp: string,
  kind: string,
  startMachine: ReturnType<typeof machine>,
  startCalibration: Calibration,
  options: Options,
  tool: "wrk" | "autocannon",
  comparison: object,
  report: string
) => {
  const end = machineAtEnd(startMachine, startCalibration, await calibrate())
  const file = write(stamp, { kind, machine: end.record, options, tool, comparison })
  process.stdout.write(`\n${report}\n${end.lines.join("\n")}\n\nwritten to ${file}\n`)
}

const runMetricsComparison = async (
  options: Options,
  rounds: number,
  tool: "wrk" | "autocannon",
  stamp: string
) => {
  const startMachine = machine()
  const startCalibration = await calibrate()
  const database = await benchDatabase(options, stamp)
  const comparison = await compareMetrics(rounds, database?.url, options, tool, log, (cleanup) =>
    cleanups.push(cleanup)
  )
  await comparisonDone(
    stamp,
    "metrics-comparison",
    startMachine,
    startCalibration,
    options,
    tool,
    comparison,
    comparisonReport(comparison)
  )
}

const runCheckoutComparison = async (
  options: Options,
  other: string,
  tool: "wrk" | "autocannon",
  stamp: string
) => {
  const startMachine = machine()
  const startCalibration = await calibrate()
  const thisDb = await benchDatabase(options, stamp, "svc_bench_this")
  const otherDb = await benchDatabase(options, stamp, "svc_bench_other")
  const comparison = await compareCheckouts({
    other,
    rounds: options.rounds,
    databases:
      thisDb === undefined || otherDb === undefined ? undefined : { this: thisDb.url, other: otherDb.url },
    options,
    tool,
    log,
    defer: (cleanup) => cleanups.push(cleanup)
  })
  await comparisonDone(
    stamp,
    "checkout-comparison",
    startMachine,
    startCalibration,
    options,
    tool,
    comparison,
    checkoutReport(comparison)
  )
}

/** The service's busy CPU time over the requests served while the profile was sampled. */
const cpuPerRequest = (profile: ProfileResult) =>
  profile.summary.busyMs / Math.max(1, profile.load.rps * (profile.summary.totalMs / 1000))

const runLoadTable = async (options: Options, tool: "wrk" | "autocannon", stamp: string) => {
  const startMachine = machine()
  const startCalibration = await calibrate()
  const startups = options.startup ? await startup(options, stamp) : undefined
  // The bare server before each store's round of cases (and once after them), so that its runs fall
  // among the cases' as the machine's load moves; the framework's floor `--rounds` times first.
  const befores: Array<Awaited<ReturnType<typeof baseline>>> = []
  const floors: Array<Awaited<ReturnType<typeof baseline>>> = []
  for (let round = 1; round <= options.rounds; round++) {
    log(`round ${round}: the framework's floor: one route of Effect's HTTP server, ${options.duration} s`)
    floors.push(await baseline(options, tool, undefined, "effect/http"))
  }
  const baselineRound = async (round: number) => {
    log(`round ${round}: baseline: node:http, ${options.duration} s, ${options.connections} connections`)
    befores.push(await baseline(options, tool))
  }
  const stores: Array<StoreResult> = []
  stores.push(await measureStore("pglite", undefined, options, tool, log, stamp, baselineRound))
  const database = await benchDatabase(options, stamp)
  let pgbenchResult: PgbenchResult | undefined
  if (database !== undefined) {
    const postgres = await measureStore("postgres", database.url, options, tool, log, stamp, baselineRound)
    stores.push(postgres)
    pgbenchResult = await pgbench(
      options,
      stamp,
      postgres.rows.find((row) => row.fixedRate !== undefined)?.fixedRate
    )
  }
  // The metered cache hit on PostgreSQL: its rounds' median.
  const pgHit = stores.find((store) => store.store === "postgres")?.rows
  const pgCacheHitRps = summarise(
    (pgHit ?? []).filter((row) => row.name === pgHit?.[0]?.name).map((row) => row.load?.rps)
  )?.median
  let roundTrips: ReadonlyArray<RoundTrips> | undefined
  if (database !== undefined) {
    log("postgres: counting database round trips of single calls")
    roundTrips = await countRoundTrips(database.url)
  }
  // Each profile runs its case on every store measured.
  const profileTargets: Array<readonly [Store, string | undefined]> = [["pglite", undefined]]
  if (database !== undefined) profileTargets.push(["postgres", database.url])
  const profiles: Array<ProfileResult> = []
  if (options.profile) {
    for (const [store, url] of profileTargets) {
      log(`${store}: case (${options.profileCase}) again under --cpu-prof`)
      profiles.push(await profileStore(store, url, options, tool, join(benchDir, `profiles-${stamp}`)))
    }
  }
  const allocationProfiles: Array<AllocationProfileResult> = []
  if (options.allocationProfile) {
    for (const [store, url] of profileTargets) {
      log(`${store}: case (${options.profileCase}) again under V8's sampling heap profiler`)
      allocationProfiles.push(await allocationProfileStore(store, url, options, tool))
    }
  }
  log("baseline again, to see how much the machine's load moved")
  const after = await baseline(options, tool)
  const baselines = [...befores, after]
  const baselineRps = median(baselines.map((run) => run.load.rps))
  const baselineRows: Array<CaseResult> = baselines.map(({ load, cpuUsPerRequest, warmUpRps }, i) => ({
    store: "node:http",
    name: i < befores.length ? "baseline (among the rounds)" : "baseline (after)",
    round: i < befores.length ? i + 1 : 1,
    expected: 200,
    load,
    errors: errorsOf(load, 200),
    cpuUsPerRequest,
    warmUpRps
  }))
  for (const [i, floor] of floors.entries())
    baselineRows.push({
      store: "effect/http",
      name: "floor: one route, no work",
      round: i + 1,
      expected: 200,
      load: floor.load,
      errors: errorsOf(floor.load, 200),
      cpuUsPerRequest: floor.cpuUsPerRequest,
      warmUpRps: floor.warmUpRps,
      note: "the same body from Effect's HTTP server, built as the service's: no case can be cheaper"
    })
  // The fixed-rate runner's own floor: the bare server at the highest rate a half-rate row was sent at.
  const fixedRate = Math.max(0, ...stores.flatMap((store) => store.rows.map((row) => row.fixedRate ?? 0)))
  if (fixedRate > 0) {
    log(`baseline at ${fixedRate} req/s, evenly spaced: the fixed-rate runner's own floor`)
    const runnerFloor = await baseline(options, tool, fixedRate)
    baselineRows.push({
      store: "node:http",
      name: "baseline at the half-rate row's rate",
      expected: 200,
      load: runnerFloor.load,
      errors: errorsOf(runnerFloor.load, 200),
      cpuUsPerRequest: runnerFloor.cpuUsPerRequest,
      fixedRate,
      note: "the fixed-rate runner's own latency"
    })
  }
  const rows = [...baselineRows, ...stores.flatMap((store) => store.rows)]
  const end = machineAtEnd(startMachine, startCalibration, await calibrate())

  const peakRssMb = Object.fromEntries(stores.map((store) => [store.store, store.peakRssMb]))
  const targets = targetsOf({ rows, baselineRps, pgbench: pgbenchResult, peakRssMb, ledger: stores })
  const out: Array<string> = [
    "",
    "each round",
    loadTable(rows, baselineRps),
    "",
    `the median of each case's ${options.rounds} rounds in this run, the spread (min-max) beside it`,
    medianTable(rows, baselineRps),
    "",
    `x baseline: req/s over the median of the ${baselines.length} baseline runs (${baselineRps.toFixed(0)} req/s)`,
    ...(pgbenchResult === undefined ? [] : pgbenchLines(pgbenchResult, pgCacheHitRps)),
    ...ledgerLines(stores),
    ...stores.flatMap((store) => [
      `${store.store}: peak RSS of the service (VmHWM) ${store.peakRssMb?.toFixed(0) ?? "?"} MiB`,
      ...(store.residentAtEnd === undefined
        ? []
        : [`${store.store}: its RSS at the end, by part (MiB): ${residentPartsLine(store.residentAtEnd)}`])
    ]),
    ...end.lines
  ]
  out.push(
    "",
    "the targets: ratios of this run's medians (spread: the rounds of the measured case over the other's median)",
    targetsTable(targets)
  )
  if (startups !== undefined) out.push("", startupTable(startups))
  if (roundTrips !== undefined)
    out.push("", "database round trips of one call (PostgreSQL)", roundTripTable(roundTrips))
  for (const profile of profiles) {
    out.push(
      "",
      `CPU profile, ${profile.store}, ${profile.caseName}: ${profile.load.rps.toFixed(0)} req/s under the profiler, ${profile.summary.totalMs} ms sampled during the load, ${profile.summary.busyMs} ms busy: about ${cpuPerRequest(profile).toFixed(2)} ms of the service's CPU per request${profile.store === "postgres" ? " (PostgreSQL's own CPU not included)" : " (PGlite's included)"}`,
      linesTable("by area (self time)", profile.summary.byArea.slice(0, 12)),
      linesTable("functions by self time", profile.summary.topSelf.slice(0, 15)),
      linesTable(
        "src/ functions by inclusive time (synchronous stacks only: Effect's fiber loop hides the callers)",
        profile.summary.topSrcInclusive.slice(0, 10)
      )
    )
  }
  for (const profile of allocationProfiles) {
    out.push(
      "",
      `allocation profile, ${profile.store}, ${profile.caseName}: ${profile.load.requests} requests, ${profile.summary.kbPerRequest} KB a request sampled (one sample per ~1 KB allocated, collected or kept)`,
      allocationTable(
        "by area (bytes allocated by the area's own functions)",
        profile.summary.byArea.slice(0, 12)
      ),
      allocationTable("functions by the bytes they allocated", profile.summary.topSelf.slice(0, 15))
    )
  }
  const file = write(stamp, {
    kind: "load",
    machine: end.record,
    options,
    tool,
    baselineRps,
    rows: rows.map((row) => ({
      ...row,
      ratioToBaseline: row.load === undefined ? null : row.load.rps / baselineRps
    })),
    peakRssMb,
    targets: targets.map((target) => ({ ...target, met: met(target) })),
    pgbench:
      pgbenchResult === undefined
        ? null
        : {
            ...pgbenchResult,
            cacheHitRps: pgCacheHitRps ?? null,
            // PostgreSQL metered cache hit req/s over pgbench -N tps; the target is 1.0 or more.
            cacheHitOverTps: pgCacheHitRps === undefined ? null : pgCacheHitRps / pgbenchResult.tps
          },
    ledger: Object.fromEntries(stores.map((store) => [store.store, store.ledger ?? null])),
    startup: startups ?? null,
    roundTrips: roundTrips ?? null,
    profiles,
    allocationProfiles
  })
  process.stdout.write(`${out.join("\n")}\n\nwritten to ${file}\n`)
}

const main = async (): Promise<number> => {
  const options = parseOptions(process.argv.slice(2))
  if (options === "help") {
    process.stdout.write(usage)
    return 0
  }
  const tool = options.tool ?? (has.wrk ? "wrk" : "autocannon")
  if (tool === "wrk" && !has.wrk)
    throw new Error("wrk is not installed (apt-get install -y wrk); or --tool autocannon")
  if (tool === "autocannon")
    log("wrk not found: autocannon instead (it saturates sooner: fast cases read low)")
  const stamp = runStamp()
  try {
    if (options.soak !== undefined) return (await runSoak(options, options.soak, stamp)) ? 0 : 1
    if (options.compareMetrics !== undefined) {
      await runMetricsComparison(options, options.compareMetrics, tool, stamp)
      return 0
    }
    if (options.against !== undefined) {
      await runCheckoutComparison(options, options.against, tool, stamp)
      return 0
    }
    await runLoadTable(options, tool, stamp)
    return 0
  } finally {
    await cleanUp()
  }
}

// Exit outright: idle keep-alive sockets of the clients would otherwise hold the process a while.
main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(error instanceof Error ? (error.stack ?? error.message) : String(error))
    process.exit(1)
  }
)
