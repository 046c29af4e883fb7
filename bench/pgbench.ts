import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { benchDir, pinned } from "./proc.ts"
import { median } from "./rounds.ts"

const run = promisify(execFile)

/**
 * The service's pool on PostgreSQL: @effect/sql-pg's PgPool opens at most `maxConnections`,
 * default 10 (node_modules/@effect/sql-pg/src/PgPool.ts), and src/store/PgClient.ts sets none.
 * pgbench gets as many clients, so both have the same number of sessions to commit through.
 */
export const serviceConnections = 10

/** One round of PostgreSQL's own limits, measured beside the service's rounds. */
export interface PgbenchRound {
  /** `pgbench -N` write transactions per second, without the time to open the connections. */
  readonly tps: number
  /** A single-row commit at the half-rate row's rate (`-R`), when one was asked for. */
  readonly atRate?: CommitLatency | undefined
  /** A single-row commit from as many clients as the load generator's connections, as fast as it can. */
  readonly atConnections?: CommitLatency | undefined
}

export interface PgbenchResult {
  /** The median of the rounds' `-N` tps. */
  readonly tps: number
  readonly clients: number
  readonly seconds: number
  readonly database: string
  /** The last round's `-N` summary, for the results file. */
  readonly output: string
  /** Each round as measured. */
  readonly rounds: ReadonlyArray<PgbenchRound>
}

/**
 * The database's own commit latency: a transaction of one single-row INSERT (`commitScript`), as the
 * cache hit's charge is one statement in one commit, from `clients` sessions, at a fixed `rate`
 * (`-R`: each timed from when it was due, as the fixed-rate runner times a request) or as fast as
 * they can.
 */
export interface CommitLatency {
  readonly clients: number
  readonly rate?: number | undefined
  readonly tps: number
  readonly transactions: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
}

/** One row appended and committed: pgbench's own history table, no index, one WAL flush a commit. */
export const commitScript = [
  "\\set aid random(1, 100000)",
  "\\set delta random(-5000, 5000)",
  "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, :aid, :delta, CURRENT_TIMESTAMP);",
  ""
].join("\n")

/** "tps = 1234.5 (without initial connection time)", or before PostgreSQL 14 "(excluding connections establishing)". */
export const parseTps = (output: string): number => {
  const match =
    /^tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)/m.exec(output)
  if (match === null) throw new Error(`pgbench printed no tps line:\n${output}`)
  return Number(match[1])
}

/**
 * Latencies (ms, ascending) of a pgbench per-transaction log (`-l`): "client_id transaction_no time
 * script_no time_epoch time_us [schedule_lag]", times in µs. At a fixed rate (`-R`) each counts from
 * when the transaction was due, as the bench's fixed-rate runner counts a request: its time plus its
 * lag behind the schedule; without `-R` there is no lag column.
 */
export const latenciesOfLog = (text: string): Float64Array => {
  const latencies: Array<number> = []
  for (const line of text.split("\n")) {
    const fields = line.trim().split(/\s+/)
    if (fields.length < 6) continue
    latencies.push((Number(fields[2]) + Number(fields[6] ?? 0)) / 1000)
  }
  return Float64Array.from(latencies).sort()
}

const quantile = (sorted: Float64Array, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0

/**
 * PostgreSQL's own limits on this server and machine, `rounds` times on `database` (a fresh one of
 * the run's: pgbench -i fills it at scale 1 once), each on core 1 like the load generator: the
 * write-transaction limit (`pgbench -N`, the TPC-B-like transaction without the contended branch and
 * teller updates: three writes and a read per commit) from `clients` sessions; with `rate` (the
 * half-rate row's), a single-row commit's latency at that rate from as many; and with
 * `loadConnections`, its latency from that many sessions as fast as they can (the load table's
 * closed loop).
 */
export const runPgbench = async (
  database: { readonly name: string; readonly url: string },
  seconds: number,
  clients: number,
  log: (line: string) => void,
  options: {
    readonly rate?: number | undefined
    readonly loadConnections?: number | undefined
    readonly rounds?: number
  } = {}
): Promise<PgbenchResult> => {
  log(`pgbench: -i -s 1 on ${database.name}`)
  // A connection URI is accepted wherever pgbench takes a database name.
  await run("pgbench", ["-i", "-s", "1", "-q", database.url], { timeout: 300_000 })
  const rounds: Array<PgbenchRound> = []
  let output = ""
  for (let round = 1; round <= (options.rounds ?? 1); round++) {
    output = await writeLoad(database.url, seconds, clients, ["-N"], log)
    const atRate =
      options.rate === undefined
        ? undefined
        : await commitLatency(database.url, seconds, clients, log, options.rate)
    const atConnections =
      options.loadConnections === undefined
        ? undefined
        : await commitLatency(database.url, seconds, options.loadConnections, log)
    rounds.push({ tps: parseTps(output), atRate, atConnections })
  }
  const tps = median(rounds.map((round) => round.tps))
  return { tps, clients, seconds, database: database.name, output: output.trim(), rounds }
}

/** `pgbench -T seconds -c clients -j 1 <extra>` on core 1, like the load generator; its output. */
const writeLoad = async (
  url: string,
  seconds: number,
  clients: number,
  extra: ReadonlyArray<string>,
  log: (line: string) => void
): Promise<string> => {
  const options = ["-T", String(seconds), "-c", String(clients), "-j", "1", ...extra]
  log(
    `pgbench: ${options.filter((option) => !option.startsWith("--log-prefix") && !option.endsWith(".sql")).join(" ")}, on core 1`
  )
  const { command, args } = pinned(1, "pgbench", [...options, url])
  const { stdout } = await run(command, args, { timeout: (seconds + 120) * 1000 })
  return stdout
}

const commitLatency = async (
  url: string,
  seconds: number,
  clients: number,
  log: (line: string) => void,
  rate?: number
): Promise<CommitLatency> => {
  mkdirSync(benchDir, { recursive: true })
  const dir = mkdtempSync(join(benchDir, "pgbench-log-"))
  try {
    const script = join(dir, "commit.sql")
    writeFileSync(script, commitScript)
    const stdout = await writeLoad(
      url,
      seconds,
      clients,
      [
        ...(rate === undefined ? [] : ["-R", String(rate)]),
        "-l",
        `--log-prefix=${join(dir, "tx")}`,
        "-f",
        script
      ],
      log
    )
    const text = readdirSync(dir)
      .filter((file) => file.startsWith("tx"))
      .map((file) => readFileSync(join(dir, file), "utf8"))
      .join("\n")
    const sorted = latenciesOfLog(text)
    return {
      clients,
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
