import { mkdirSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { type BenchAccount, paidAccounts, pool } from "./accounts.ts"
import { type Entry, type LoadResult, runLoad } from "./load.ts"
import { probeMcp } from "./mcp.ts"
import type { Options } from "./options.ts"
import { type ProfileSummary, summariseProfile } from "./profile.ts"
import { call, expectStatus, type Service, type Store, startService } from "./service.ts"
import { query, sampleWorld } from "./world.ts"

export interface CaseResult {
  readonly store: Store | "node:http"
  readonly name: string
  /** The status every response should have. */
  readonly expected: number
  readonly load?: LoadResult | undefined
  /** Responses of another status, plus socket errors and timeouts. */
  readonly errors?: number | undefined
  readonly unavailable?: string | undefined
  readonly note?: string | undefined
}

export interface StoreResult {
  readonly store: Store
  readonly rows: ReadonlyArray<CaseResult>
  /** VmHWM of the service at the end of its cases. */
  readonly peakRssMb: number | undefined
  readonly accounts: number
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

interface Case {
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
 */
export const prepareCases = async (service: Service, accountCount: number): Promise<ReadonlyArray<Case>> => {
  const accounts = await paidAccounts(service.url, service.admin, accountCount, credits)
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
  await pool(accounts, 8, async (account, i) => {
    const reply = await call(service.url, profile, { key: account.key, idempotencyKey: `bench-replay-${i}` })
    expectStatus("replay set-up", reply, 200)
  })
  const replay = await call(service.url, profile, { key: first.key, idempotencyKey: "bench-replay-0" })
  if (expectStatus("replay", replay, 200).headers.get("idempotent-replayed") !== "true") {
    throw new Error("a repeated Idempotency-Key was not answered as a replay")
  }
  const rejected = `/v1/profnet/profiles${query({ identifier: slug, sections: "bogus" })}`
  const invalid = expectStatus("rejected call", await call(service.url, rejected, { key: first.key }), 400)
  if (invalid.body.code !== "INVALID_INPUT")
    throw new Error(`expected INVALID_INPUT, got ${invalid.body.code}`)
  const mcp = await probeMcp(service.url, first.key, "getProfile", { identifier: slug, freshness: "recent" })

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
      entries: accounts.map((account, i) => ({
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
        ? accounts.map((account) => mcp.entry(account.key))
        : { unavailable: mcp.reason },
      ...(mcp.available ? { note: `MCP ${mcp.dialect}` } : {})
    }
  ]
}

const runCase = async (
  store: Store,
  service: Service,
  testCase: Case,
  options: Options,
  tool: "wrk" | "autocannon"
): Promise<CaseResult> => {
  if ("unavailable" in testCase.entries) {
    return {
      store,
      name: testCase.name,
      expected: testCase.expected,
      unavailable: testCase.entries.unavailable
    }
  }
  const load = await runLoad({
    label: `${store}-${testCase.name.slice(1, 2)}`,
    baseUrl: service.url,
    method: testCase.method,
    entries: testCase.entries,
    duration: options.duration,
    connections: options.connections,
    tool,
    countStatuses: true
  })
  return {
    store,
    name: testCase.name,
    expected: testCase.expected,
    load,
    errors: errorsOf(load, testCase.expected),
    note: testCase.note
  }
}

export const measureStore = async (
  store: Store,
  databaseUrl: string | undefined,
  options: Options,
  tool: "wrk" | "autocannon",
  log: (line: string) => void
): Promise<StoreResult> => {
  const service = await startService({ label: `service-${store}`, store, databaseUrl })
  try {
    log(`${store}: service up (pid ${service.pid}); preparing ${options.accounts} production accounts`)
    const cases = await prepareCases(service, options.accounts)
    const rows: Array<CaseResult> = []
    for (const testCase of cases) {
      log(`${store}: ${testCase.name}`)
      rows.push(await runCase(store, service, testCase, options, tool))
      await sleep(1000)
    }
    return { store, rows, peakRssMb: service.memory()?.peakMb, accounts: options.accounts }
  } finally {
    await service.stop()
  }
}

export interface ProfileResult {
  readonly store: Store
  readonly load: LoadResult
  readonly summary: ProfileSummary
}

/** The cache-hit case once more, with the service under `--cpu-prof`. */
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
  let load: LoadResult
  let window: { fromMs: number; toMs: number }
  try {
    const [cacheHit] = await prepareCases(service, options.accounts)
    if (cacheHit === undefined || "unavailable" in cacheHit.entries) throw new Error("no cache-hit case")
    const started = performance.now()
    load = await runLoad({
      label: `${store}-profile`,
      baseUrl: service.url,
      method: "GET",
      entries: cacheHit.entries,
      duration: options.duration,
      connections: options.connections,
      tool,
      countStatuses: true
    })
    // The profile starts with the process; half a second off each end of the load for slack.
    window = { fromMs: started - service.spawnedAt + 500, toMs: performance.now() - service.spawnedAt - 500 }
  } finally {
    await service.stop()
  }
  if (!readdirSync(dir).includes(name)) throw new Error(`the service wrote no ${name} into ${dir}`)
  return { store, load, summary: summariseProfile(join(dir, name), window) }
}
