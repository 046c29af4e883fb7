import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { fileURLToPath } from "node:url"
import { type BenchAccount, paidAccounts, pool } from "./accounts.ts"
import { type Preload, preloadPglite, preloadPostgres } from "./ledger.ts"
import { type Entry, type LoadResult, requestsSent, runLoad } from "./load.ts"
import { probeMcp } from "./mcp.ts"
import { type ResidentParts, residentPartsOf } from "./memoryMap.ts"
import { defaultWarmup, type Options } from "./options.ts"
import { benchDir, cpuUsBetween, isLocalServer, postgresCpu, postgresCpuUsBetween } from "./proc.ts"
import {
  type AllocationSummary,
  type ProfileSummary,
  summariseAllocation,
  summariseProfile
} from "./profile.ts"
import type { Reference } from "./reference.ts"
import { median } from "./rounds.ts"
import { call, expectStatus, type Service, type Store, startService } from "./service.ts"
import { query, sampleWorld } from "./world.ts"

export interface CaseResult {
  readonly store: Store | Reference
  readonly name: string
  /** Which of the run's rounds (`--rounds`) measured it, from 1. */
  readonly round?: number | undefined
  /** The status every response should have. */
  readonly expected: number
  readonly load?: LoadResult | undefined
  /** Responses of another status, plus socket errors and timeouts. */
  readonly errors?: number | undefined
  readonly unavailable?: string | undefined
  readonly note?: string | undefined
  /** The service's CPU time (user and system) over the requests answered, in microseconds. */
  readonly cpuUsPerRequest?: number | undefined
  /**
   * PostgreSQL's CPU time over the requests answered, in microseconds: every process of a server on
   * this machine (the service's backends, and whatever else the load made it do: autovacuum, WAL).
   */
  readonly databaseCpuUsPerRequest?: number | undefined
  /** Sent at this many requests per second rather than as fast as answered (its req/s is no ratio). */
  readonly fixedRate?: number | undefined
  /** The requests/s of the unmeasured load before the case (`--warmup`), when there was one. */
  readonly warmUpRps?: number | undefined
  /** Bytes the service allocated per request answered (`bench/allocation-probe.ts`), in KB. */
  readonly allocatedKbPerRequest?: number | undefined
  /** Full collections (mark-compact) during the case. */
  readonly markCompacts?: number | undefined
  /** The service's longest collection pause during the case, in milliseconds. */
  readonly longestGcPauseMs?: number | undefined
  /** How late the service's event loop turned during the case: 99th percentile and longest, in ms. */
  readonly loopDelayP99Ms?: number | undefined
  readonly loopDelayMaxMs?: number | undefined
  /** The cache hits' group commit during the case, from the service's /metrics (cases that charged hits). */
  readonly groupCommit?: GroupCommit | undefined
}

/** The group commit's histograms over a case: their counts and the means of their sums. */
export interface GroupCommit {
  readonly statements: number
  readonly meanBatch: number
  /** A hit's mean wait in the queue before a statement took it, in ms. */
  readonly meanWaitMs: number
  /** A statement's mean time, from its batch taken off the queue to its result, in ms. */
  readonly meanStatementMs: number
  /** Statements that took over 10 ms (the histogram's bucket boundary), as a share of all. */
  readonly statementsOver10Ms: number
}

const groupCommitSeries = [
  "svc_hit_charge_batch_size_count",
  "svc_hit_charge_batch_size_sum",
  "svc_hit_charge_wait_seconds_count",
  "svc_hit_charge_wait_seconds_sum",
  "svc_hit_charge_statement_seconds_count",
  "svc_hit_charge_statement_seconds_sum",
  'svc_hit_charge_statement_seconds_bucket{le="0.01"}'
] as const

/** The group commit's series now, read from the service's metrics page (undefined if it has none). */
const groupCommitNow = async (service: Service): Promise<Map<string, number> | undefined> => {
  const response = await fetch(`${service.url}/metrics`, {
    headers: { authorization: `Bearer ${service.metricsToken}` }
  }).catch(() => undefined)
  if (response === undefined || !response.ok) return undefined
  const values = new Map<string, number>()
  for (const line of (await response.text()).split("\n")) {
    const series = groupCommitSeries.find((name) => line.startsWith(`${name} `))
    if (series !== undefined) values.set(series, Number(line.slice(series.length + 1)))
  }
  return values
}

const groupCommitBetween = (
  before: Map<string, number> | undefined,
  after: Map<string, number> | undefined
): GroupCommit | undefined => {
  if (before === undefined || after === undefined) return undefined
  const delta = (series: (typeof groupCommitSeries)[number]) =>
    (after.get(series) ?? 0) - (before.get(series) ?? 0)
  const statements = delta("svc_hit_charge_statement_seconds_count")
  const waits = delta("svc_hit_charge_wait_seconds_count")
  if (statements <= 0 || waits <= 0) return undefined
  return {
    statements,
    meanBatch: delta("svc_hit_charge_batch_size_sum") / Math.max(1, delta("svc_hit_charge_batch_size_count")),
    meanWaitMs: (delta("svc_hit_charge_wait_seconds_sum") / waits) * 1000,
    meanStatementMs: (delta("svc_hit_charge_statement_seconds_sum") / statements) * 1000,
    statementsOver10Ms: 1 - delta('svc_hit_charge_statement_seconds_bucket{le="0.01"}') / statements
  }
}

export interface StoreResult {
  readonly store: Store
  readonly rows: ReadonlyArray<CaseResult>
  /** VmHWM of the service at the end of its cases. */
  readonly peakRssMb: number | undefined
  /** What its RSS was made of then (`bench/memoryMap.ts`). */
  readonly residentAtEnd?: ResidentParts | undefined
  readonly accounts: number
  readonly ledger?: LedgerResult | undefined
}

/** The cache-hit case on the ledger as the cases left it, and again with `rows` more receipts. */
export interface LedgerResult {
  readonly rows: number
  readonly preload: Preload
  /** PGlite: stopping the service, and starting it again on its directory after the preload. */
  readonly restartSeconds?: number | undefined
  readonly freshRps: number
  readonly grownRps: number
  /** grownRps / freshRps. */
  readonly ratio: number
}

/** Enough credits that no account runs dry during a run. */
const credits = 10_000_000

export const errorsOf = (load: LoadResult, expected: number): number => {
  const statuses = Object.entries(load.statuses)
  const unexpected = statuses.some(([status]) => status === "400+")
    ? expected < 400
      ? (load.statuses["400+"] ?? 0)
      : (load.statuses["2xx"] ?? 0)
    : statuses.filter(([status]) => Number(status) !== expected).reduce((sum, [, n]) => sum + n, 0)
  return unexpected + load.socketErrors
}

export interface Case {
  readonly name: string
  readonly method: "GET" | "POST"
  readonly expected: number
  readonly entries: ReadonlyArray<Entry> | { readonly unavailable: string }
  readonly note?: string
}

const bearer = (account: BenchAccount) => ({ Authorization: `Bearer ${account.key}` })

/**
 * Mints the accounts, fills the cache with the profile every case reads, completes one
 * idempotency key per account for the replay case, and finds the MCP dialect.
 *
 * The three metered cases each get accounts of their own (the replay three times as many): a key
 * may make 600 calls a minute on the production plan, and one case's calls would otherwise fill
 * the next one's windows (a replay answered 429 measures the limiter). `set` picks fresh ones
 * (their own client IPs too, since an IP mints 5 keys an hour) for another preparation on the
 * same service.
 */
export const prepareCases = async (
  service: Service,
  accountCount: number,
  set = 0
): Promise<ReadonlyArray<Case>> => {
  const group = 100 + 3 * set
  if (group + 2 > 255) throw new Error(`no client IPs left for account set ${set}`)
  const accounts = await paidAccounts(service.url, service.admin, accountCount, credits, group)
  // A replay is the fastest metered answer (16-17k a second here: 200 keys would pass 600 a minute
  // each within 8 s), so it gets three times the keys.
  const replayAccounts = await paidAccounts(service.url, service.admin, 3 * accountCount, credits, group + 1)
  const mcpAccounts = await paidAccounts(service.url, service.admin, accountCount, credits, group + 2)
  const slug = sampleWorld().people[0]!.slug
  const profile = `/v1/profnet/profiles${query({ identifier: slug, freshness: "recent" })}`
  const first = accounts[0]!
  expectStatus(
    "warm-up",
    await call(service.url, profile, { key: first.key, idempotencyKey: "bench-warm-0" }),
    200
  )
  const hit = await call(service.url, profile, { key: first.key, idempotencyKey: "bench-warm-1" })
  if (expectStatus("cache hit", hit, 200).body.freshness?.served !== "recent") {
    throw new Error(`the second call was not served from the cache: ${JSON.stringify(hit.body.freshness)}`)
  }
  await pool(replayAccounts, 8, async (account, i) => {
    const reply = await call(service.url, profile, { key: account.key, idempotencyKey: `bench-replay-${i}` })
    expectStatus("replay set-up", reply, 200)
  })
  const replay = await call(service.url, profile, {
    key: replayAccounts[0]!.key,
    idempotencyKey: "bench-replay-0"
  })
  if (expectStatus("replay", replay, 200).headers.get("idempotent-replayed") !== "true") {
    throw new Error("a repeated Idempotency-Key was not answered as a replay")
  }
  const rejected = `/v1/profnet/profiles${query({ identifier: slug, sections: "bogus" })}`
  const invalid = expectStatus("rejected call", await call(service.url, rejected, { key: first.key }), 400)
  if (invalid.body.code !== "INVALID_INPUT")
    throw new Error(`expected INVALID_INPUT, got ${invalid.body.code}`)
  const mcp = await probeMcp(service.url, mcpAccounts[0]!.key, "getProfile", {
    identifier: slug,
    freshness: "recent"
  })

  return [
    {
      name: "(a) cache hit, metered",
      method: "GET",
      expected: 200,
      entries: accounts.map((account) => ({
        path: profile,
        headers: { ...bearer(account), "Idempotency-Key": "{{IDEM}}" }
      }))
    },
    {
      name: "(b) idempotent replay",
      method: "GET",
      expected: 200,
      entries: replayAccounts.map((account, i) => ({
        path: profile,
        headers: { ...bearer(account), "Idempotency-Key": `bench-replay-${i}` }
      }))
    },
    {
      name: "(c) GET /v1/usage",
      method: "GET",
      expected: 200,
      entries: accounts.map((account) => ({ path: "/v1/usage", headers: bearer(account) }))
    },
    {
      name: "(d) rejected, INVALID_INPUT",
      method: "GET",
      expected: 400,
      entries: accounts.map((account) => ({ path: rejected, headers: bearer(account) }))
    },
    {
      name: "(e) MCP tools/call, cache hit",
      method: "POST",
      expected: 200,
      entries: mcp.available
        ? mcpAccounts.map((account) => mcp.entry(account.key))
        : { unavailable: mcp.reason },
      ...(mcp.available ? { note: `MCP ${mcp.dialect}` } : {})
    }
  ]
}

/**
 * The case's own load for `seconds`, not measured, before it is measured. A service fresh from the
 * set-up's calls is not yet at its steady state on a case's path: V8 has not optimised the path's
 * code (on a service pinned to one core its compiler threads share that core), and on PGlite its
 * WebAssembly is still tiering up. Four runs of 3 s of the cache hit in a row, on a service just
 * set up (docs/performance.md, round 18): on PostgreSQL 1,471, 1,963, 1,893 and 2,232 req/s with
 * the service's CPU 551, 367, 376 and 326 µs a request; on PGlite 797, 1,066, 1,283 and 1,644 req/s
 * at 1,260, 937, 776 and 607 µs; on a slower machine (round 19) the run after 3 s of warm-up was
 * still 0.89x of the ones after it, hence 8 s by default. A service in use is warm; the table
 * measures that, and the warm-up's own rate stands in the row's notes.
 */
export const warmUp = async (
  service: { readonly url: string },
  label: string,
  testCase: Pick<Case, "method" | "entries">,
  seconds: number,
  options: Options,
  tool: "wrk" | "autocannon"
): Promise<LoadResult | undefined> => {
  if (seconds <= 0 || "unavailable" in testCase.entries) return undefined
  return runLoad({
    label: `${label}-warm-up`,
    baseUrl: service.url,
    method: testCase.method,
    entries: testCase.entries,
    duration: seconds,
    connections: options.connections,
    tool,
    countStatuses: false
  })
}

export const runCase = async (
  store: Store,
  service: Service,
  testCase: Case,
  options: Options,
  tool: "wrk" | "autocannon",
  /** A fixed rate (requests per second) instead of as fast as the service answers. */
  rate?: number,
  /**
   * Seconds of unmeasured load first, as fast as the service answers; `--warmup` unless given. At a
   * fixed rate none: the runner sends `--warmup` seconds of that rate first, on its own connections.
   */
  warmUpSeconds: number = rate === undefined ? options.warmup : 0
): Promise<CaseResult> => {
  if ("unavailable" in testCase.entries) {
    return {
      store,
      name: testCase.name,
      expected: testCase.expected,
      unavailable: testCase.entries.unavailable
    }
  }
  const label = `${store}-${testCase.name.slice(1, 2)}`
  const warm = await warmUp(service, label, testCase, warmUpSeconds, options, tool)
  // PostgreSQL's processes only when the store is a server on this machine.
  const database = store === "postgres" && isLocalServer(options.pg)
  const databaseCpu = () => (database ? postgresCpu() : new Map<number, number>())
  const databaseBefore = databaseCpu()
  const groupCommitBefore = await groupCommitNow(service)
  const cpuBefore = service.cpuUs()
  service.allocation?.begin()
  const load = await runLoad({
    label,
    baseUrl: service.url,
    method: testCase.method,
    entries: testCase.entries,
    duration: options.duration,
    connections: options.connections,
    tool,
    countStatuses: true,
    rate,
    warmup: rate === undefined ? undefined : options.warmup
  })
  const cpuAfter = service.cpuUs()
  const databaseAfter = databaseCpu()
  const allocation = await service.allocation?.end()
  const groupCommit = groupCommitBetween(groupCommitBefore, await groupCommitNow(service))
  // At a fixed rate the CPU, the bytes and the group commit were counted over the runner's warm-up
  // too (the same load): each request's share is over every request it sent.
  const sent = requestsSent(load, rate, options.warmup)
  return {
    store,
    name: testCase.name,
    expected: testCase.expected,
    load,
    errors: errorsOf(load, testCase.expected),
    note: testCase.note,
    cpuUsPerRequest: cpuUsBetween(cpuBefore, cpuAfter, sent),
    databaseCpuUsPerRequest: postgresCpuUsBetween(databaseBefore, databaseAfter, sent),
    ...(groupCommit === undefined ? {} : { groupCommit }),
    ...(rate === undefined ? {} : { fixedRate: rate }),
    ...(warm === undefined ? {} : { warmUpRps: warm.rps }),
    ...(allocation === undefined || load.requests === 0
      ? {}
      : {
          allocatedKbPerRequest: allocation.allocatedBytes / sent / 1024,
          markCompacts: allocation.markCompacts,
          longestGcPauseMs: allocation.longestGcPauseUs / 1000,
          loopDelayP99Ms: allocation.loopDelayP99Ms,
          loopDelayMaxMs: allocation.loopDelayMaxMs
        })
  }
}

/**
 * Adds `rows` receipts to the ledger of `service`'s store: on PostgreSQL while it runs; on PGlite
 * (its directory) with the service stopped, and started again afterwards (the one returned).
 */
const growLedger = async (
  service: Service,
  rows: number,
  on: {
    readonly databaseUrl: string | undefined
    readonly dataDir: string | undefined
    readonly stamp: string
    readonly start: (label: string) => Promise<Service>
  }
): Promise<{ service: Service; preload: Preload; restartSeconds?: number }> => {
  if (on.dataDir === undefined) {
    if (on.databaseUrl === undefined) throw new Error("no database to add receipts to")
    return { service, preload: await preloadPostgres(on.databaseUrl, rows, on.stamp) }
  }
  const stopping = performance.now()
  await service.stop()
  const stopped = performance.now()
  const preload = await preloadPglite(on.dataDir, rows, on.stamp)
  const restarting = performance.now()
  const restarted = await on.start(`service-${service.store}-ledger`)
  return {
    service: restarted,
    preload,
    restartSeconds: (stopped - stopping + performance.now() - restarting) / 1000
  }
}

/** The cases `--cases` names (by the letter in "(a) ..."), or every case. */
export const chosenCases = (options: Options, all: ReadonlyArray<Case>): ReadonlyArray<Case> =>
  options.cases === undefined ? all : all.filter((c) => options.cases?.includes(c.name.charAt(1)))

export const measureStore = async (
  store: Store,
  databaseUrl: string | undefined,
  options: Options,
  tool: "wrk" | "autocannon",
  log: (line: string) => void,
  stamp: string,
  /** Run before each round's cases (the bare server's round, so that its runs fall among the cases'). */
  beforeRound: (round: number) => Promise<void> = async () => {}
): Promise<StoreResult> => {
  // With --ledger-rows PGlite's directory is this function's (not the one startService makes and
  // removes), so that this process can open it while the service is stopped, add the rows, and
  // start the service on it again.
  const onDisk = store === "pglite" && options.ledgerRows !== undefined
  if (onDisk) mkdirSync(benchDir, { recursive: true })
  const dataDir = onDisk ? mkdtempSync(join(benchDir, "pglite-ledger-")) : undefined
  const start = (label: string) =>
    startService({
      label,
      store,
      databaseUrl,
      measureAllocation: true,
      ...(dataDir === undefined ? {} : { dataDir })
    })
  let service = await start(`service-${store}`)
  let peakRssMb: number | undefined
  const notePeak = () => {
    const peak = service.memory()?.peakMb
    if (peak !== undefined) peakRssMb = Math.max(peakRssMb ?? 0, peak)
  }
  try {
    log(`${store}: service up (pid ${service.pid}); preparing ${options.accounts} production accounts`)
    // Every case `options.rounds` times, each round on fresh accounts (the last round's calls still
    // fill their rate windows: 600 a minute on the production plan), so each figure is the median
    // of its rounds in this one run (bench/rounds.ts).
    const rows: Array<CaseResult> = []
    let cases: ReadonlyArray<Case> = []
    for (let round = 1; round <= options.rounds; round++) {
      if (round > 1) log(`${store}: round ${round}: preparing ${options.accounts} fresh accounts`)
      cases = chosenCases(options, await prepareCases(service, options.accounts, round - 1))
      await beforeRound(round)
      for (const testCase of cases) {
        log(`${store}: round ${round}, ${testCase.name}`)
        rows.push({ ...(await runCase(store, service, testCase, options, tool)), round })
        await sleep(1000)
      }
    }
    let ledger: LedgerResult | undefined
    const cacheHit = cases.find((testCase) => testCase.name.charAt(1) === "a")
    const hitRps = median(
      rows
        .filter((row) => row.name === cacheHit?.name)
        .flatMap((row) => (row.load === undefined ? [] : [row.load.rps]))
    )
    if (cacheHit !== undefined && hitRps >= 2) {
      // Latency under moderate load: the hit at half the rate it saturated at (its rounds' median),
      // as many rounds.
      const rate = Math.floor(hitRps / 2)
      const halfRate = { ...cacheHit, name: `${cacheHit.name}, at half its rate` }
      for (let round = 1; round <= options.rounds; round++) {
        log(`${store}: round ${round}, ${halfRate.name} (${rate} req/s)`)
        rows.push({ ...(await runCase(store, service, halfRate, options, tool, rate)), round })
        await sleep(1000)
      }
    }
    if (options.ledgerRows !== undefined && cacheHit !== undefined) {
      const n = options.ledgerRows
      log(`${store}: adding ${n} settled receipts to the ledger`)
      notePeak()
      const grownLedger = await growLedger(service, n, { databaseUrl, dataDir, stamp, start })
      service = grownLedger.service
      const { preload, restartSeconds } = grownLedger
      log(
        `${store}: ${n} receipts added in ${preload.insertSeconds.toFixed(1)} s, VACUUM ANALYZE and CHECKPOINT ${preload.vacuumSeconds.toFixed(1)} s`
      )
      const grownCase = { ...cacheHit, name: `${cacheHit.name}, +${n} receipts` }
      log(`${store}: ${grownCase.name}`)
      // Warmed at least the default's seconds whatever --warmup says: the service waited through
      // the preload's minutes, and a service idle that long starts cold (its pool's connections
      // closed after a minute unused; with no receipt added, two minutes of idle alone took the
      // next cache-hit run on PostgreSQL to 0.61x of the run before it, docs/performance.md round
      // 8; V8 flushed no code in the idle minutes, round 19), PostgreSQL has just checkpointed
      // and its buffers hold the preload's pages, or PGlite's was restarted; the comparison is of
      // the ledger's size.
      const grown = await runCase(
        store,
        service,
        grownCase,
        options,
        tool,
        undefined,
        Math.max(defaultWarmup, options.warmup)
      )
      rows.push(grown)
      const freshRps = hitRps
      const grownRps = grown.load?.rps ?? 0
      ledger = {
        rows: n,
        preload,
        restartSeconds,
        freshRps,
        grownRps,
        ratio: freshRps === 0 ? 0 : grownRps / freshRps
      }
    }
    notePeak()
    const residentAtEnd = residentPartsOf(service.pid)
    return { store, rows, peakRssMb, residentAtEnd, accounts: options.accounts, ledger }
  } finally {
    await service.stop()
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
  }
}

export interface ProfileResult {
  readonly store: Store
  readonly caseName: string
  readonly load: LoadResult
  readonly summary: ProfileSummary
}

/**
 * The profiled case (`--profile-case`) on a service of its own: its accounts set up, its warm-up,
 * then its load once, `starting` called just before the load.
 */
const loadProfiledCase = async (
  service: Service,
  label: string,
  options: Options,
  tool: "wrk" | "autocannon",
  starting: () => void
): Promise<{ readonly caseName: string; readonly load: LoadResult }> => {
  const profiled = (await prepareCases(service, options.accounts)).find((c) =>
    c.name.startsWith(`(${options.profileCase})`)
  )
  if (profiled === undefined || "unavailable" in profiled.entries)
    throw new Error(`no case (${options.profileCase}) to profile`)
  await warmUp(service, label, profiled, options.warmup, options, tool)
  starting()
  const load = await runLoad({
    label,
    baseUrl: service.url,
    method: profiled.method,
    entries: profiled.entries,
    duration: options.duration,
    connections: options.connections,
    tool,
    countStatuses: true
  })
  return { caseName: profiled.name, load }
}

export interface AllocationProfileResult {
  readonly store: Store
  readonly caseName: string
  readonly load: LoadResult
  readonly summary: AllocationSummary
}

const allocationSampler = fileURLToPath(new URL("./allocation-sampler.ts", import.meta.url))

/**
 * The profiled case once more on a service of its own under V8's sampling heap profiler
 * (`bench/allocation-sampler.ts`), sampling only over the case's load: where its bytes are
 * allocated, a request.
 */
export const allocationProfileStore = async (
  store: Store,
  databaseUrl: string | undefined,
  options: Options,
  tool: "wrk" | "autocannon"
): Promise<AllocationProfileResult> => {
  mkdirSync(benchDir, { recursive: true })
  const file = join(benchDir, `heap-${store}-${process.pid}-${Date.now()}.heapprofile`)
  const service = await startService({
    label: `allocation-profile-${store}`,
    store,
    databaseUrl,
    nodeFlags: ["--import", allocationSampler],
    env: { BENCH_HEAP_PROFILE_FILE: file }
  })
  try {
    const { caseName, load } = await loadProfiledCase(
      service,
      `${store}-allocation-profile`,
      options,
      tool,
      () => service.signal("SIGUSR2")
    )
    service.signal("SIGUSR2")
    for (let waited = 0; !existsSync(file); waited += 50) {
      if (waited > 30_000) throw new Error(`the service wrote no heap profile to ${file}`)
      await sleep(50)
    }
    return { store, caseName, load, summary: summariseAllocation(file, load.requests) }
  } finally {
    await service.stop()
    rmSync(file, { force: true })
  }
}

/** One case once more (the cache hit unless `--profile-case` names another), with the service under `--cpu-prof`. */
export const profileStore = async (
  store: Store,
  databaseUrl: string | undefined,
  options: Options,
  tool: "wrk" | "autocannon",
  dir: string
): Promise<ProfileResult> => {
  mkdirSync(dir, { recursive: true })
  const name = `${store}.cpuprofile`
  const service = await startService({
    label: `profile-${store}`,
    store,
    databaseUrl,
    nodeFlags: ["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-name", name]
  })
  let profiled: { readonly caseName: string; readonly load: LoadResult }
  let window: { fromMs: number; toMs: number }
  try {
    let started = 0
    profiled = await loadProfiledCase(service, `${store}-profile`, options, tool, () => {
      started = performance.now()
    })
    // The profile starts with the process; half a second off each end of the load for slack.
    window = { fromMs: started - service.spawnedAt + 500, toMs: performance.now() - service.spawnedAt - 500 }
  } finally {
    await service.stop()
  }
  if (!readdirSync(dir).includes(name)) throw new Error(`the service wrote no ${name} into ${dir}`)
  return { store, ...profiled, summary: summariseProfile(join(dir, name), window) }
}
