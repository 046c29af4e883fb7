import { resolve } from "node:path"
import { type Case, type CaseResult, chosenCases, prepareCases, runCase } from "./cases.ts"
import type { Options } from "./options.ts"
import { table } from "./report.ts"
import { type Service, type Store, startService } from "./service.ts"

/** The checkout the bench runs from, or another one (a `git worktree` of an older commit, say). */
export type Checkout = "this" | "other"

export interface CheckoutRound {
  readonly store: Store
  readonly checkout: Checkout
  readonly round: number
  readonly result: CaseResult
}

/** A service's memory: its RSS once up (before any case) and its peak RSS (VmHWM) after the last. */
export interface CheckoutMemory {
  readonly store: Store
  readonly checkout: Checkout
  readonly startedMb: number | undefined
  readonly peakMb: number | undefined
}

export interface CheckoutComparison {
  /** The other checkout's directory. */
  readonly other: string
  readonly rounds: ReadonlyArray<CheckoutRound>
  readonly memory: ReadonlyArray<CheckoutMemory>
}

/**
 * `--against DIR`: every case on this checkout's service and on the service of the checkout at
 * DIR, side by side on the same machine, in `rounds` rounds that alternate which goes first, so
 * that the machine's changing load falls on both. Each store gets both services at once (on
 * PostgreSQL each in its own database: the two may not share migrations), each with its own
 * accounts. Besides req/s, each run reports the service's own CPU time per request, which moves
 * less with the load of the rest of the machine.
 */
export const compareCheckouts = async (input: {
  readonly other: string
  readonly rounds: number
  /** PostgreSQL too: one database for each checkout. */
  readonly databases: { readonly this: string; readonly other: string } | undefined
  readonly options: Options
  readonly tool: "wrk" | "autocannon"
  readonly log: (line: string) => void
  readonly defer: (cleanup: () => Promise<void>) => void
}): Promise<CheckoutComparison> => {
  const { options, tool, log } = input
  const other = resolve(input.other)
  const measured: Array<CheckoutRound> = []
  const memory: Array<CheckoutMemory> = []
  const stores: ReadonlyArray<Store> = input.databases === undefined ? ["pglite"] : ["pglite", "postgres"]
  for (const store of stores) {
    const start = async (checkout: Checkout): Promise<Service> => {
      const service = await startService({
        label: `${store}-${checkout}`,
        store,
        databaseUrl: input.databases?.[checkout],
        measureAllocation: true,
        ...(checkout === "other" ? { cwd: other } : {})
      })
      input.defer(service.stop)
      return service
    }
    const services: Record<Checkout, Service> = { this: await start("this"), other: await start("other") }
    const startedMb = { this: services.this.memory()?.rssMb, other: services.other.memory()?.rssMb }
    try {
      for (let round = 1; round <= input.rounds; round++) {
        // Fresh accounts every round: the last round's calls still fill their rate windows (600 a
        // minute on the production plan), and a round answered 429 measures the limiter, not the case.
        // (Set 0 is the normal bench's.)
        log(`${store}: round ${round}: preparing ${options.accounts} fresh accounts on each service`)
        const cases: Record<Checkout, ReadonlyArray<Case>> = {
          this: chosenCases(options, await prepareCases(services.this, options.accounts, round)),
          other: chosenCases(options, await prepareCases(services.other, options.accounts, round))
        }
        const order: ReadonlyArray<Checkout> = round % 2 === 1 ? ["this", "other"] : ["other", "this"]
        for (const [i, testCase] of cases.this.entries()) {
          for (const checkout of order) {
            // Each checkout's own case: its entries carry that service's accounts.
            const own = cases[checkout][i]
            if (own?.name !== testCase.name)
              throw new Error(
                `the other checkout prepares different cases (${own?.name} for ${testCase.name})`
              )
            const result = await runCase(store, services[checkout], own, options, tool)
            measured.push({ store, checkout, round, result })
            log(
              `${store}: round ${round}, ${testCase.name}, ${checkout}: ${result.load?.rps.toFixed(0) ?? "-"} req/s, ${result.cpuUsPerRequest?.toFixed(0) ?? "-"} µs CPU/request, ${result.allocatedKbPerRequest?.toFixed(1) ?? "-"} KB allocated/request`
            )
          }
        }
      }
      for (const checkout of ["this", "other"] as const)
        memory.push({
          store,
          checkout,
          startedMb: startedMb[checkout],
          peakMb: services[checkout].memory()?.peakMb
        })
    } finally {
      await services.this.stop()
      await services.other.stop()
    }
  }
  return { other, rounds: measured, memory }
}

const mean = (values: ReadonlyArray<number>) =>
  values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length

const spread = (values: ReadonlyArray<number>, digits: number) =>
  values.length === 0
    ? "-"
    : `${mean(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)})`

/** `this / other = ratio` of two sets of rounds' means; `-` when this checkout has none. */
const meansAndRatio = (these: ReadonlyArray<number>, others: ReadonlyArray<number>) =>
  these.length === 0
    ? "-"
    : `${mean(these).toFixed(0)} / ${mean(others).toFixed(0)} = ${(mean(these) / mean(others)).toFixed(3)}`

const mib = (value: number | undefined) => (value === undefined ? "-" : `${value.toFixed(0)} MiB`)

const stores = (comparison: CheckoutComparison): ReadonlyArray<Store> => [
  ...new Set(comparison.memory.map((row) => row.store))
]

const memoryOf = (comparison: CheckoutComparison, store: Store) => ({
  this: comparison.memory.find((row) => row.store === store && row.checkout === "this"),
  other: comparison.memory.find((row) => row.store === store && row.checkout === "other")
})

export const checkoutReport = (comparison: CheckoutComparison): string => {
  const groups = new Map<string, { store: Store; name: string; rows: Array<CheckoutRound> }>()
  for (const row of comparison.rounds) {
    const id = `${row.store}\u0000${row.result.name}`
    const group = groups.get(id) ?? { store: row.store, name: row.result.name, rows: [] }
    group.rows.push(row)
    groups.set(id, group)
  }
  /**
   * A round with more than 1 in 100 answers other than the case's own (429s, say) measured something
   * else: left out. A few are kept: on a slow machine the cache hit's slowest calls outlive the
   * rotation over the accounts, and two calls of one account at once get CONCURRENCY_LIMIT for one
   * (1 to 3 in 5,000 on PGlite), which would otherwise leave out every round of the case.
   */
  const clean = (row: CheckoutRound) => (row.result.errors ?? 0) <= (row.result.load?.requests ?? 0) / 100
  const leftOut = (rows: ReadonlyArray<CheckoutRound>, checkout: Checkout) =>
    rows.filter((row) => row.checkout === checkout && !clean(row)).length
  const of = (
    rows: ReadonlyArray<CheckoutRound>,
    checkout: Checkout,
    pick: (result: CaseResult) => number | undefined
  ) =>
    rows
      .filter((row) => row.checkout === checkout && clean(row))
      .map((row) => pick(row.result))
      .filter((value): value is number => value !== undefined)
  const rps = (result: CaseResult) => result.load?.rps
  const cpu = (result: CaseResult) => result.cpuUsPerRequest
  const databaseCpu = (result: CaseResult) => result.databaseCpuUsPerRequest
  const allocated = (result: CaseResult) => result.allocatedKbPerRequest
  return [
    `this checkout against ${comparison.other}, ${Math.max(...comparison.rounds.map((row) => row.round))} alternating rounds (mean, min-max; a round that answered more than 1% with another status than the case's own is left out)`,
    table(
      [
        "store",
        "case",
        "this req/s",
        "other req/s",
        "req/s this/other",
        "this CPU µs/req",
        "other CPU µs/req",
        "CPU this/other",
        "DB CPU µs/req this/other",
        "this KB alloc/req",
        "other KB alloc/req",
        "KB this/other",
        "rounds left out this/other"
      ],
      [...groups.values()].map(({ store, name, rows }) => [
        store,
        name,
        spread(of(rows, "this", rps), 0),
        spread(of(rows, "other", rps), 0),
        (mean(of(rows, "this", rps)) / mean(of(rows, "other", rps))).toFixed(3),
        spread(of(rows, "this", cpu), 0),
        spread(of(rows, "other", cpu), 0),
        (mean(of(rows, "this", cpu)) / mean(of(rows, "other", cpu))).toFixed(3),
        meansAndRatio(of(rows, "this", databaseCpu), of(rows, "other", databaseCpu)),
        spread(of(rows, "this", allocated), 1),
        spread(of(rows, "other", allocated), 1),
        (mean(of(rows, "this", allocated)) / mean(of(rows, "other", allocated))).toFixed(3),
        `${leftOut(rows, "this")}/${leftOut(rows, "other")}`
      ]),
      [false, false, true, true, true, true, true, true, true, true, true, true, true]
    ),
    table(
      [
        "store",
        "this RSS once up",
        "other RSS once up",
        "this peak RSS",
        "other peak RSS",
        "peak this/other"
      ],
      stores(comparison).map((store) => {
        const { this: mine, other } = memoryOf(comparison, store)
        return [
          store,
          mib(mine?.startedMb),
          mib(other?.startedMb),
          mib(mine?.peakMb),
          mib(other?.peakMb),
          mine?.peakMb === undefined || other?.peakMb === undefined
            ? "-"
            : (mine.peakMb / other.peakMb).toFixed(3)
        ]
      }),
      [false, true, true, true, true, true]
    )
  ].join("\n")
}
