import type { CaseResult, StoreResult } from "./cases.ts"
import type { PgbenchResult } from "./pgbench.ts"
import type { AllocationLine, Line } from "./profile.ts"
import type { RoundTrips } from "./roundtrips.ts"
import type { SoakResult } from "./soak.ts"
import type { StartupResult } from "./startup.ts"

const pad = (cells: ReadonlyArray<string>, widths: ReadonlyArray<number>, right: ReadonlyArray<boolean>) =>
  cells.map((cell, i) => (right[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join("  ")

export const table = (
  header: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<string>>,
  right: ReadonlyArray<boolean>
) => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)))
  return [
    pad(header, widths, right),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...rows.map((row) => pad(row, widths, right))
  ].join("\n")
}

const fixed = (n: number, digits: number) => n.toFixed(digits)

/** Statuses other than the expected one, as "429x12 500x1". */
const others = (row: CaseResult): string => {
  if (row.load === undefined) return ""
  const parts = Object.entries(row.load.statuses)
    .filter(([status, n]) => n > 0 && status !== String(row.expected) && status !== "2xx")
    .map(([status, n]) => `${status}x${n}`)
  if (row.load.socketErrors > 0) parts.push(`socket x${row.load.socketErrors}`)
  return parts.join(" ")
}

export const loadTable = (rows: ReadonlyArray<CaseResult>, baselineRps: number): string =>
  table(
    [
      "store",
      "case",
      "req/s",
      "p50 ms",
      "p99 ms",
      "max ms",
      "errors",
      "x baseline",
      "CPU µs/req",
      "DB CPU µs/req",
      "KB alloc/req",
      "full GCs",
      "GC max ms",
      "loop p99/max ms",
      "notes"
    ],
    rows.map((row) =>
      row.load === undefined
        ? [row.store, row.name, ...Array<string>(12).fill("-"), `not available: ${row.unavailable ?? ""}`]
        : [
            row.store,
            row.name,
            fixed(row.load.rps, 0),
            fixed(row.load.p50Ms, 2),
            fixed(row.load.p99Ms, 2),
            fixed(row.load.maxMs, 1),
            String(row.errors ?? 0),
            row.fixedRate === undefined ? fixed(row.load.rps / baselineRps, 3) : "-",
            row.cpuUsPerRequest === undefined ? "-" : fixed(row.cpuUsPerRequest, 0),
            row.databaseCpuUsPerRequest === undefined ? "-" : fixed(row.databaseCpuUsPerRequest, 0),
            row.allocatedKbPerRequest === undefined ? "-" : fixed(row.allocatedKbPerRequest, 1),
            row.markCompacts === undefined ? "-" : String(row.markCompacts),
            row.longestGcPauseMs === undefined ? "-" : fixed(row.longestGcPauseMs, 1),
            row.loopDelayP99Ms === undefined || row.loopDelayMaxMs === undefined
              ? "-"
              : `${fixed(row.loopDelayP99Ms, 1)} / ${fixed(row.loopDelayMaxMs, 1)}`,
            [
              `expect ${row.expected}`,
              others(row),
              row.note ?? "",
              row.fixedRate === undefined ? "" : `sent at ${row.fixedRate} req/s, evenly spaced (open loop)`,
              row.warmUpRps === undefined ? "" : `after a warm-up at ${fixed(row.warmUpRps, 0)} req/s`,
              row.groupCommit === undefined
                ? ""
                : `group commit: ${row.groupCommit.statements} statements of ${fixed(row.groupCommit.meanBatch, 1)} hits, a hit's wait ${fixed(row.groupCommit.meanWaitMs, 2)} ms, a statement ${fixed(row.groupCommit.meanStatementMs, 2)} ms (mean; ${fixed(100 * row.groupCommit.statementsOver10Ms, 1)}% over 10 ms)`,
              row.load.runnerDelay === undefined
                ? ""
                : `the runner's own loop late p99 ${fixed(row.load.runnerDelay.p99Ms, 1)} / max ${fixed(row.load.runnerDelay.maxMs, 1)} ms`
            ]
              .filter((s) => s.length > 0)
              .join("; ")
          ]
    ),
    [false, false, true, true, true, true, true, true, true, true, true, true, true, true, false]
  )

/**
 * pgbench's limit beside the cache hit's; and at the half-rate row's rate, the database's own
 * latency for a commit of its own (a floor for that row's: each metered hit waits for one commit).
 */
export const pgbenchLines = (pgbench: PgbenchResult, cacheHitRps: number | undefined): Array<string> => [
  `pgbench -N: ${fixed(pgbench.tps, 0)} tps (${pgbench.clients} clients, ${pgbench.seconds} s); metered cache hit on PostgreSQL = ${
    cacheHitRps === undefined ? "?" : fixed(cacheHitRps / pgbench.tps, 2)
  }x of it`,
  ...(pgbench.atRate === undefined
    ? []
    : [
        `pgbench -N at ${pgbench.atRate.rate} tps (the half-rate row's rate, -R): p50 ${fixed(pgbench.atRate.p50Ms, 2)} ms, p99 ${fixed(pgbench.atRate.p99Ms, 2)} ms, max ${fixed(pgbench.atRate.maxMs, 1)} ms over ${pgbench.atRate.transactions} transactions, each timed from when it was due: the database's own commit latency at that rate`
      ])
]

/** One line per store measured with --ledger-rows: the second cache-hit rate over the first. */
export const ledgerLines = (stores: ReadonlyArray<StoreResult>): Array<string> =>
  stores.flatMap(({ store, ledger }) =>
    ledger === undefined
      ? []
      : [
          `${store}: cache hit with ${ledger.rows} receipts preloaded: ${fixed(ledger.ratio, 3)} of the rate on an empty ledger (${fixed(ledger.grownRps, 0)} vs ${fixed(ledger.freshRps, 0)} req/s); preload ${fixed(ledger.preload.insertSeconds, 1)} s of INSERTs, ${fixed(ledger.preload.vacuumSeconds, 1)} s VACUUM ANALYZE and CHECKPOINT${
            ledger.restartSeconds === undefined
              ? ", the service running"
              : `, ${fixed(ledger.restartSeconds, 1)} s stopping and restarting the service`
          }`
        ]
  )

export const startupTable = (results: ReadonlyArray<StartupResult>): string =>
  `start-up: spawn of node src/main.ts to the first 200 from /readyz (polled every 20 ms)\n${table(
    ["start", "median ms", "runs ms", "peak RSS MiB at ready", "notes"],
    results.map((result) => [
      result.kind,
      fixed(result.medianMs, 0),
      result.runsMs.map((ms) => fixed(ms, 0)).join(", "),
      result.peakRssMb.map((mb) => fixed(mb, 0)).join(", "),
      result.note ?? ""
    ]),
    [false, true, true, true, false]
  )}`

export const roundTripTable = (rows: ReadonlyArray<RoundTrips>): string =>
  table(
    ["call", "round trips", "statements (BEGIN/COMMIT included)"],
    rows.map((row) => [
      row.call,
      row.min === row.max ? String(row.min) : `${row.min} (up to ${row.max})`,
      String(row.statements.length)
    ]),
    [false, true, true]
  )

export const linesTable = (title: string, lines: ReadonlyArray<Line>): string =>
  `${title}\n${table(
    ["ms", "%", "where"],
    lines.map((line) => [String(line.ms), fixed(line.percent, 1), line.name]),
    [true, true, false]
  )}`

/** Bytes a request by area or function, from an allocation profile. */
export const allocationTable = (title: string, lines: ReadonlyArray<AllocationLine>): string =>
  `${title}\n${table(
    ["B/req", "%", "where"],
    lines.map((line) => [String(line.bytesPerRequest), fixed(line.percent, 1), line.name]),
    [true, true, false]
  )}`

export const soakReport = (result: SoakResult): string => {
  const statusLine = (counts: Record<string, number>) =>
    Object.entries(counts)
      .map(([status, n]) => `${status}x${n}`)
      .join(" ")
  return [
    `soak on ${result.store}: ${result.requests} requests in ${fixed(result.seconds, 0)} s (${fixed(result.rps, 0)} req/s, ${result.workers} workers), p50 ${fixed(result.p50Ms, 1)} ms, p99 ${fixed(result.p99Ms, 1)} ms`,
    "",
    table(
      ["request", "statuses"],
      Object.entries(result.statuses).map(([kind, counts]) => [kind, statusLine(counts)]),
      [false, false]
    ),
    "",
    table(
      ["operation", "statuses"],
      Object.entries(result.operations).map(([id, counts]) => [id, statusLine(counts)]),
      [false, false]
    ),
    ...(result.skippedOperations.length === 0 ? [] : [`skipped: ${result.skippedOperations.join(", ")}`]),
    "",
    ...result.faults.map((line) => `faults: ${line}`),
    "",
    table(
      ["invariant", "pass", "detail"],
      result.checks.map((check) => [check.name, check.pass ? "yes" : "NO", check.detail]),
      [false, false, false]
    ),
    "",
    result.pass ? "soak: every invariant held" : "soak: FAILED"
  ].join("\n")
}
