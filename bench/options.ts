import { parseArgs } from "node:util"

export interface Options {
  /** Seconds of load per case. */
  readonly duration: number
  /** Seconds of the same load before each case, not measured (0: none). */
  readonly warmup: number
  /** Open connections of the load generator. */
  readonly connections: number
  /** Paid accounts the load rotates over (the one-call-in-flight rule is per account). */
  readonly accounts: number
  /** Base URL of a PostgreSQL server; the bench creates and drops its own database there. */
  readonly pg: string | undefined
  /** Soak mode: a steady mixed load for this many seconds, then the ledger invariants. */
  readonly soak: number | undefined
  readonly profile: boolean
  /** The case the CPU profile loads: its letter, a to e (default a, the cache hit). */
  readonly profileCase: string
  /** Also where that case's bytes are allocated, in a run of its own under V8's sampling heap profiler. */
  readonly allocationProfile: boolean
  /** Settled receipts to add to the ledger before measuring the cache-hit case a second time. */
  readonly ledgerRows: number | undefined
  /** Time the service's start-up (spawn to the first 200 from /readyz) before the load. */
  readonly startup: boolean
  readonly tool: "wrk" | "autocannon" | undefined
  /** Rounds of the metrics on/off comparison of the cache hit (instead of the load table). */
  readonly compareMetrics: number | undefined
  /** Another checkout of the service to run every case against, side by side (instead of the load table). */
  readonly against: string | undefined
  /** Rounds of each case in one run (with --against, per checkout): each figure is their median. */
  readonly rounds: number
  /** Only the cases of these letters (a to e); every case when undefined. */
  readonly cases: string | undefined
}

/**
 * Seconds of warm-up unless `--warmup` says otherwise. On a 2-core machine (docs/performance.md,
 * round 19) the cache hit measured for 5 s after 3 s of warm-up made on average 0.89x of the same
 * service's next runs (eight services), and the run after 8 s of load 1.01x of the ones after it.
 */
export const defaultWarmup = 8

export const usage = `npm run bench -- [options]

  --duration N      seconds of load per case (default 10)
  --warmup N        seconds of the same load before each case and the baseline, not measured
                    (default 8; 0 measures from a service that has only been set up)
  --connections N   open connections (default 50)
  --accounts N      paid accounts the load rotates over (default 200)
  --pg URL          also measure on PostgreSQL (a fresh database svc_bench_<ts> is created and dropped),
                    and PostgreSQL's own write limit beside it (pgbench -N on svc_pgbench_<ts>);
                    BENCH_DATABASE_URL does the same
  --soak N          soak mode: N seconds of mixed load, then ledger invariants and memory growth
  --no-profile      skip the CPU profile of the cache-hit case
  --profile-case X  profile case X (a to e) instead of the cache hit
  --alloc-profile   also where that case allocates its bytes, a request, by area and function (V8's
                    sampling heap profiler, in a run of its own: no measured case runs with it)
  --ledger-rows N   run the cache-hit case again after N settled receipts (and their idempotency
                    keys) were added to each store's ledger, to see whether the rate falls as it grows
  --no-startup      skip timing the service's start-up (spawn to the first 200 from /readyz)
  --tool wrk|autocannon   force the load generator (default: wrk when installed)
  --compare-metrics N     only the metered cache hit, N rounds each with metrics on and METRICS=off,
                    alternating (on PostgreSQL with --pg); prints the on/off ratio
  --against DIR     every case on this checkout and on the one at DIR (a git worktree of an older
                    commit, say), side by side, in alternating rounds (on PostgreSQL too with --pg):
                    req/s and the service's CPU per request of each, and their ratios
  --rounds N        rounds of every case in one run (default 3): each figure is their median, the
                    spread (min-max) beside it; with --against, rounds per checkout
  --cases LETTERS   only these cases (c: GET /v1/usage only; ac: two of them); the half-rate row
                    and the ledger row run with (a)
`

const positiveInt = (name: string, text: string | undefined, fallback: number): number => {
  if (text === undefined) return fallback
  const n = Number(text)
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got ${text}`)
  return n
}

export const parseOptions = (argv: ReadonlyArray<string>): Options | "help" => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      duration: { type: "string" },
      warmup: { type: "string" },
      connections: { type: "string" },
      accounts: { type: "string" },
      pg: { type: "string" },
      soak: { type: "string" },
      "no-profile": { type: "boolean" },
      "profile-case": { type: "string" },
      "alloc-profile": { type: "boolean" },
      "ledger-rows": { type: "string" },
      "no-startup": { type: "boolean" },
      tool: { type: "string" },
      "compare-metrics": { type: "string" },
      against: { type: "string" },
      rounds: { type: "string" },
      cases: { type: "string" },
      help: { type: "boolean", short: "h" }
    },
    strict: true
  })
  if (values.help === true) return "help"
  const tool = values.tool
  if (tool !== undefined && tool !== "wrk" && tool !== "autocannon") {
    throw new Error(`--tool must be wrk or autocannon, got ${tool}`)
  }
  const profileCase = values["profile-case"] ?? "a"
  if (!/^[a-e]$/.test(profileCase))
    throw new Error(`--profile-case must be a letter a to e, got ${profileCase}`)
  const cases = values.cases
  if (cases !== undefined && !/^[a-e]+$/.test(cases))
    throw new Error(`--cases must be letters a to e, got ${cases}`)
  const pg = values.pg ?? process.env.BENCH_DATABASE_URL
  return {
    duration: positiveInt("duration", values.duration, 10),
    warmup: values.warmup === "0" ? 0 : positiveInt("warmup", values.warmup, defaultWarmup),
    connections: positiveInt("connections", values.connections, 50),
    accounts: positiveInt("accounts", values.accounts, 200),
    pg: pg === undefined || pg.length === 0 ? undefined : pg,
    soak: values.soak === undefined ? undefined : positiveInt("soak", values.soak, 60),
    profile: values["no-profile"] !== true,
    profileCase,
    allocationProfile: values["alloc-profile"] === true,
    ledgerRows:
      values["ledger-rows"] === undefined ? undefined : positiveInt("ledger-rows", values["ledger-rows"], 0),
    startup: values["no-startup"] !== true,
    tool,
    compareMetrics:
      values["compare-metrics"] === undefined
        ? undefined
        : positiveInt("compare-metrics", values["compare-metrics"], 3),
    against: values.against === undefined || values.against.length === 0 ? undefined : values.against,
    rounds: positiveInt("rounds", values.rounds, 3),
    cases
  }
}
