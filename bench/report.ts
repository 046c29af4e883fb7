import type { CaseResult, StoreResult } from "./cases.ts"
import type { PgbenchResult } from "./pgbench.ts"
import type { AllocationLine, Line } from "./profile.ts"
import { ratio, summarise, type Target, targetCells, withSpread } from "./rounds.ts"
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

/** The rows of each case (store and name) over the rounds, in the order the cases were first measured. */
export const byCase = (rows: ReadonlyArray<CaseResult>): ReadonlyArray<ReadonlyArray<CaseResult>> => {
  const groups = new Map<string, Array<CaseResult>>()
  for (const row of rows) {
    const id = `${row.store}\u0000${row.name}`
    const group = groups.get(id) ?? []
    group.push(row)
    groups.set(id, group)
  }
  return [...groups.values()]
}

const of = (rows: ReadonlyArray<CaseResult>, pick: (row: CaseResult) => number | undefined) =>
  summarise(rows.map((row) => (row.load === undefined ? undefined : pick(row))))

/** Each case's median over its rounds, the spread (min-max) beside it. */
export const medianTable = (rows: ReadonlyArray<CaseResult>, baselineRps: number): string =>
  table(
    [
      "store",
      "case",
      "rounds",
      "req/s (min-max)",
      "x baseline (min-max)",
      "p50 ms",
      "p99 ms (min-max)",
      "CPU µs/req",
      "DB CPU µs/req",
      "errors",
      "notes"
    ],
    byCase(rows).map((group) => {
      const first = group[0]!
      const rps = of(group, (row) => row.load?.rps)
      const x =
        rps === undefined || first.fixedRate !== undefined
          ? "-"
          : withSpread(
              {
                ...rps,
                median: rps.median / baselineRps,
                min: rps.min / baselineRps,
                max: rps.max / baselineRps
              },
              3
            )
      return [
        first.store,
        first.name,
        String(group.length),
        withSpread(rps, 0),
        x,
        withSpread(
          of(group, (row) => row.load?.p50Ms),
          2
        ),
        withSpread(
          of(group, (row) => row.load?.p99Ms),
          2
        ),
        withSpread(
          of(group, (row) => row.cpuUsPerRequest),
          0
        ),
        withSpread(
          of(group, (row) => row.databaseCpuUsPerRequest),
          0
        ),
        String(group.reduce((sum, row) => sum + (row.errors ?? 0), 0)),
        first.fixedRate === undefined ? "" : `sent at ${first.fixedRate} req/s, evenly spaced (open loop)`
      ]
    }),
    [false, false, true, true, true, true, true, true, true, true, false]
  )

/** PostgreSQL's own figures over the rounds: `-N` tps, and a single-row commit's p99 at the half rate and at the load's connections. */
export const pgbenchSummary = (pgbench: PgbenchResult) => ({
  tps: summarise(pgbench.rounds.map((round) => round.tps)),
  atRate: summarise(pgbench.rounds.map((round) => round.atRate?.p99Ms)),
  atRateP50: summarise(pgbench.rounds.map((round) => round.atRate?.p50Ms)),
  rate: pgbench.rounds.find((round) => round.atRate !== undefined)?.atRate?.rate,
  atConnections: summarise(pgbench.rounds.map((round) => round.atConnections?.p99Ms)),
  connections: pgbench.rounds.find((round) => round.atConnections !== undefined)?.atConnections?.clients
})

/**
 * pgbench's limit beside the cache hit's; at the half-rate row's rate and at the load's
 * connections, the database's own latency for a single-row commit (a floor for the hit's: each
 * metered hit waits for one commit).
 */
export const pgbenchLines = (pgbench: PgbenchResult, cacheHitRps: number | undefined): Array<string> => {
  const summary = pgbenchSummary(pgbench)
  return [
    `pgbench -N: ${withSpread(summary.tps, 0)} tps (median of ${pgbench.rounds.length} rounds, ${pgbench.clients} clients, ${pgbench.seconds} s); metered cache hit on PostgreSQL = ${
      cacheHitRps === undefined ? "?" : fixed(cacheHitRps / pgbench.tps, 2)
    }x of it`,
    ...(summary.rate === undefined
      ? []
      : [
          `single-row commit (pgbench -f, ${pgbench.clients} clients) at ${summary.rate} tps (the half-rate row's rate, -R): p50 ${withSpread(summary.atRateP50, 2)} ms, p99 ${withSpread(summary.atRate, 2)} ms, each timed from when it was due: the database's own commit latency at that rate`
        ]),
    ...(summary.connections === undefined
      ? []
      : [
          `single-row commit (pgbench -f) from ${summary.connections} clients, as fast as they can: p99 ${withSpread(summary.atConnections, 2)} ms`
        ])
  ]
}

/** Issue 68's targets as measured in this run: each a ratio of medians, the spread of the numerator's rounds beside it. */
export interface MeasuredTarget extends Target {
  readonly spread?: { readonly min: number; readonly max: number } | undefined
}

export const targetsOf = (input: {
  readonly rows: ReadonlyArray<CaseResult>
  readonly baselineRps: number
  readonly pgbench: PgbenchResult | undefined
  readonly peakRssMb: Readonly<Record<string, number | undefined>>
  readonly ledger: ReadonlyArray<StoreResult>
}): ReadonlyArray<MeasuredTarget> => {
  const store = input.rows.some((row) => row.store === "postgres") ? "postgres" : "pglite"
  const rowsOf = (prefix: string) =>
    input.rows.filter((row) => row.store === store && row.name.startsWith(prefix))
  const hitName = input.rows.find((row) => row.store === store && row.name.startsWith("(a)"))?.name
  const exact = (name: string | undefined) =>
    input.rows.filter((row) => row.store === store && row.name === name)
  const versus = (
    name: string,
    rows: ReadonlyArray<CaseResult>,
    pick: (row: CaseResult) => number | undefined,
    to: number | undefined,
    bound: Target["bound"]
  ): MeasuredTarget => {
    const summary = of(rows, pick)
    return {
      name,
      ratio: ratio(summary?.median, to),
      bound,
      ...(summary === undefined || to === undefined || !(to > 0)
        ? {}
        : { spread: { min: summary.min / to, max: summary.max / to } })
    }
  }
  const rps = (row: CaseResult) => row.load?.rps
  const p99 = (row: CaseResult) => row.load?.p99Ms
  const base = input.baselineRps
  const pg = input.pgbench === undefined ? undefined : pgbenchSummary(input.pgbench)
  const targets: Array<MeasuredTarget> = [
    versus(`${store}: cache hit vs the bare server`, exact(hitName), rps, base, { atLeast: 0.1 }),
    versus(`${store}: rejected vs the bare server`, rowsOf("(d)"), rps, base, { atLeast: 0.4 }),
    versus(`${store}: usage vs the bare server`, rowsOf("(c)"), rps, base, { atLeast: 0.25 }),
    versus(`${store}: MCP hit vs the bare server`, rowsOf("(e)"), rps, base, { atLeast: 0.1 }),
    versus(`${store}: replay vs the bare server`, rowsOf("(b)"), rps, base, { atLeast: 0.3 })
  ]
  if (pg !== undefined) {
    targets.push(
      versus("postgres: cache hit vs pgbench -N tps", exact(hitName), rps, pg.tps?.median, { atLeast: 1 }),
      versus(
        `postgres: hit p99 at half rate vs a single-row commit's p99 at ${pg.rate ?? "?"} tps`,
        exact(hitName === undefined ? undefined : `${hitName}, at half its rate`),
        p99,
        pg.atRate?.median,
        { atMost: 1.5 }
      ),
      versus(
        `postgres: hit p99 at ${pg.connections ?? "?"} connections vs a single-row commit's p99 from as many`,
        exact(hitName),
        p99,
        pg.atConnections?.median,
        { atMost: 2 }
      )
    )
  }
  for (const [name, limit] of [
    ["postgres", 200],
    ["pglite", 256]
  ] as const) {
    const peak = input.peakRssMb[name]
    if (peak !== undefined)
      targets.push({
        name: `${name}: peak RSS (MiB) vs ${limit} MiB`,
        ratio: peak / limit,
        bound: { atMost: 1 }
      })
  }
  for (const { store: name, ledger } of input.ledger) {
    if (ledger === undefined || name !== "pglite") continue
    targets.push({
      name: `pglite: hit with ${ledger.rows} receipts vs the empty ledger`,
      ratio: ledger.ratio,
      bound: { atLeast: 0.95 }
    })
    const grown = input.rows.find(
      (row) => row.store === name && row.name.endsWith(`+${ledger.rows} receipts`)
    )
    if (grown?.load !== undefined)
      targets.push({
        name: `pglite: hit p99 with ${ledger.rows} receipts vs 50 ms`,
        ratio: grown.load.p99Ms / 50,
        bound: { atMost: 1 }
      })
  }
  return targets
}

export const targetsTable = (targets: ReadonlyArray<MeasuredTarget>): string =>
  table(
    ["target (issue 68)", "median", "spread", "bound", "met"],
    targets.map((target) => {
      const [name, median, bound, verdict] = targetCells(target)
      return [
        name!,
        median!,
        target.spread === undefined
          ? "-"
          : `${target.spread.min.toFixed(3)}-${target.spread.max.toFixed(3)}x`,
        bound!,
        verdict!
      ]
    }),
    [false, true, true, true, false]
  )

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
