import { randomInt } from "node:crypto"
import { parseArgs } from "node:util"

export interface StormOptions {
  readonly instances: number
  /** Seconds of load (the chaos runs during it); draining and checking come after. */
  readonly seconds: number
  /** Logical calls in flight at once. */
  readonly concurrency: number
  /** The lease of a metered call (LEASE_SECONDS of every instance). */
  readonly leaseSeconds: number
  readonly restartPostgres: boolean
  /** `<version>/<cluster>` of the PostgreSQL restarted by --restart-postgres. */
  readonly pgCluster: string | undefined
  /** Base URL of the PostgreSQL server; the storm creates and drops its own database there. */
  readonly pg: string
  readonly redis: string
  /** Seeds the call mix and the chaos schedule (timing still varies from run to run). */
  readonly seed: number
  readonly short: boolean
  /** Also an agent paying with x402 on a local chain (anvil), and the x402 invariant. */
  readonly x402: boolean
}

export const usage = `npm run storm -- [options]

Starts N instances of the service on one fresh PostgreSQL database and one Redis, with one simulated
upstream provider; drives concurrent metered calls retried with the same Idempotency-Key across
instances while it injects upstream faults, kill -9s and restarts an instance and stalls one past
the lease; then checks the ledger invariants and exits 1 if any fails.

  --instances N         service instances (default 2)
  --seconds S           seconds of load and chaos (default 180; 46 with --short: one chaos cycle)
  --concurrency C       logical calls in flight (default 12; 8 with --short)
  --lease S             LEASE_SECONDS of the instances (default 5)
  --short               the CI form: about 70 s in all on 2 cores
  --restart-postgres    also restart PostgreSQL once per chaos cycle (off by default: only where
                        the operator allows it, it drops every connection to the server)
  --pg-cluster V/NAME   the cluster --restart-postgres restarts (default <first of /etc/postgresql>/main)
  --pg URL              PostgreSQL server (default postgres://postgres@127.0.0.1:5432/postgres,
                        or STORM_DATABASE_URL); a database svc_storm_<ts> is created and dropped
  --redis URL           Redis (default redis://127.0.0.1:6379, or STORM_REDIS_URL)
  --seed N              seed of the call mix and the schedule (default random, printed)
  --x402                also start anvil with the test token, offer the x402 rail on every instance
                        (each its own facilitator) and have an agent buy credits with x402 through the
                        chaos; then check that every x402 purchase row matches one on-chain transfer
`

const positiveInt = (name: string, text: string | undefined, fallback: number): number => {
  if (text === undefined) return fallback
  const n = Number(text)
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got ${text}`)
  return n
}

const loopback = new Set(["127.0.0.1", "localhost", "[::1]", "::1"])

/** The storm touches loopback services only. */
const loopbackUrl = (name: string, url: string): string => {
  const host = new URL(url).hostname
  if (!loopback.has(host)) throw new Error(`--${name} must point at a loopback address, got ${host}`)
  return url
}

export const parseStormOptions = (argv: ReadonlyArray<string>): StormOptions | "help" => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      instances: { type: "string" },
      seconds: { type: "string" },
      concurrency: { type: "string" },
      lease: { type: "string" },
      short: { type: "boolean" },
      "restart-postgres": { type: "boolean" },
      "pg-cluster": { type: "string" },
      pg: { type: "string" },
      redis: { type: "string" },
      seed: { type: "string" },
      x402: { type: "boolean" },
      help: { type: "boolean", short: "h" }
    },
    strict: true
  })
  if (values.help === true) return "help"
  const short = values.short === true
  const seed = values.seed === undefined ? randomInt(1, 2 ** 31) : Number(values.seed)
  if (!Number.isInteger(seed)) throw new Error(`--seed must be an integer, got ${values.seed}`)
  const cluster = values["pg-cluster"]
  if (cluster !== undefined && !/^\d+\/[\w-]+$/.test(cluster)) {
    throw new Error(`--pg-cluster must look like 15/main, got ${cluster}`)
  }
  return {
    instances: positiveInt("instances", values.instances, 2),
    seconds: positiveInt("seconds", values.seconds, short ? 46 : 180),
    concurrency: positiveInt("concurrency", values.concurrency, short ? 8 : 12),
    leaseSeconds: positiveInt("lease", values.lease, 5),
    restartPostgres: values["restart-postgres"] === true,
    pgCluster: cluster,
    pg: loopbackUrl(
      "pg",
      values.pg ?? process.env.STORM_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
    ),
    redis: loopbackUrl("redis", values.redis ?? process.env.STORM_REDIS_URL ?? "redis://127.0.0.1:6379"),
    seed,
    short,
    x402: values.x402 === true
  }
}

/** A small seeded generator (mulberry32): the same seed draws the same mix. */
export const seeded = (seed: number) => {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    next,
    int: (below: number) => Math.floor(next() * below),
    pick: <A>(list: ReadonlyArray<A>): A => list[Math.floor(next() * list.length)]!
  }
}

export type Random = ReturnType<typeof seeded>
