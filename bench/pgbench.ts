import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { benchDir, pinned } from "./proc.ts"

const run = promisify(execFile)

/**
 * The service's pool on PostgreSQL: @effect/sql-pg's PgPool opens at most `maxConnections`,
 * default 10 (node_modules/@effect/sql-pg/src/PgPool.ts), and src/store/PgClient.ts sets none.
 * pgbench gets as many clients, so both have the same number of sessions to commit through.
 */
export const serviceConnections = 10

export interface PgbenchResult {
  /** Write transactions per second, without the time to open the connections. */
  readonly tps: number
  readonly clients: number
  readonly seconds: number
  readonly database: string
  /** pgbench's own summary, for the results file. */
  readonly output: string
  /** The same transactions at a fixed rate (the cache hit's half-rate row's), when one was asked for. */
  readonly atRate?: PgbenchAtRate
}

/** `pgbench -N -R rate`: the database's own commit latency at the rate the half-rate row is sent at. */
export interface PgbenchAtRate {
  readonly rate: number
  readonly tps: number
  readonly transactions: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
}

/** "tps = 1234.5 (without initial connection time)", or before PostgreSQL 14 "(excluding connections establishing)". */
export const parseTps = (output: string): number => {
  const match =
    /^tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)/m.exec(output)
  if (match === null) throw new Error(`pgbench printed no tps line:\n${output}`)
  return Number(match[1])
}

/**
 * Latencies (ms, ascending) of a `pgbench -R` per-transaction log (`-l`): "client_id transaction_no
 * time script_no time_epoch time_us schedule_lag", times in µs. Each counts from when the
 * transaction was due, as the bench's fixed-rate runner counts a request: its time plus its lag
 * behind the schedule.
 */
export const latenciesOfLog = (text: string): Float64Array => {
  const latencies: Array<number> = []
  for (const line of text.split("\n")) {
    const fields = line.trim().split(/\s+/)
    if (fields.length < 7) continue
    latencies.push((Number(fields[2]) + Number(fields[6])) / 1000)
  }
  return Float64Array.from(latencies).sort()
}

const quantile = (sorted: Float64Array, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0

/**
 * PostgreSQL's own write-transaction limit on this server and machine: `pgbench -N` (the TPC-B-like
 * transaction without the contended branch and teller updates: three writes and a read per commit)
 * on `database` (a fresh one of the run's: pgbench -i fills it at scale 1), on core 1 like the load
 * generator.
 */
export const runPgbench = async (
  database: { readonly name: string; readonly url: string },
  seconds: number,
  clients: number,
  log: (line: string) => void,
  /** Also run the transactions at this fixed rate (`-R`) and report their latency. */
  rate?: number
): Promise<PgbenchResult> => {
  log(`pgbench: -i -s 1 on ${database.name}`)
  // A connection URI is accepted wherever pgbench takes a database name.
  await run("pgbench", ["-i", "-s", "1", "-q", database.url], { timeout: 300_000 })
  const stdout = await writeLoad(database.url, seconds, clients, [], log)
  const result = { tps: parseTps(stdout), clients, seconds, database: database.name, output: stdout.trim() }
  if (rate === undefined) return result
  return { ...result, atRate: await atRate(database.url, seconds, clients, rate, log) }
}

/** `pgbench -N -T seconds -c clients -j 1 <extra>` on core 1, like the load generator; its output. */
const writeLoad = async (
  url: string,
  seconds: number,
  clients: number,
  extra: ReadonlyArray<string>,
  log: (line: string) => void
): Promise<string> => {
  const options = ["-N", "-T", String(seconds), "-c", String(clients), "-j", "1", ...extra]
  log(`pgbench: ${options.filter((option) => !option.startsWith("--log-prefix")).join(" ")}, on core 1`)
  const { command, args } = pinned(1, "pgbench", [...options, url])
  const { stdout } = await run(command, args, { timeout: (seconds + 120) * 1000 })
  return stdout
}

const atRate = async (
  url: string,
  seconds: number,
  clients: number,
  rate: number,
  log: (line: string) => void
): Promise<PgbenchAtRate> => {
  mkdirSync(benchDir, { recursive: true })
  const dir = mkdtempSync(join(benchDir, "pgbench-log-"))
  try {
    const stdout = await writeLoad(
      url,
      seconds,
      clients,
      ["-R", String(rate), "-l", `--log-prefix=${join(dir, "tx")}`],
      log
    )
    const text = readdirSync(dir)
      .map((file) => readFileSync(join(dir, file), "utf8"))
      .join("\n")
    const sorted = latenciesOfLog(text)
    return {
      rate,
      tps: parseTps(stdout),
      transactions: sorted.length,
      p50Ms: quantile(sorted, 0.5),
      p99Ms: quantile(sorted, 0.99),
      maxMs: sorted.at(-1) ?? 0
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
