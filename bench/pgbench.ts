import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { pinned } from "./proc.ts"

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
}

/** "tps = 1234.5 (without initial connection time)", or before PostgreSQL 14 "(excluding connections establishing)". */
export const parseTps = (output: string): number => {
  const match =
    /^tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)/m.exec(output)
  if (match === null) throw new Error(`pgbench printed no tps line:\n${output}`)
  return Number(match[1])
}

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
  log: (line: string) => void
): Promise<PgbenchResult> => {
  log(`pgbench: -i -s 1 on ${database.name}`)
  // A connection URI is accepted wherever pgbench takes a database name.
  await run("pgbench", ["-i", "-s", "1", "-q", database.url], { timeout: 300_000 })
  log(`pgbench: -N -T ${seconds} -c ${clients} -j 1, on core 1`)
  const { command, args } = pinned(1, "pgbench", [
    "-N",
    "-T",
    String(seconds),
    "-c",
    String(clients),
    "-j",
    "1",
    database.url
  ])
  const { stdout } = await run(command, args, { timeout: (seconds + 120) * 1000 })
  return { tps: parseTps(stdout), clients, seconds, database: database.name, output: stdout.trim() }
}
