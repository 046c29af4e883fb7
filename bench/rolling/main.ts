// `npm run rolling`: haproxy in front of N instances on one PostgreSQL and Redis, steady metered
// load retried as a careful client does (same Idempotency-Key), each instance restarted in turn
// with SIGTERM; then failed calls, ledger drift and p99 during the restarts. See docs/operations.md.
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { parseArgs } from "node:util"
import { mint, pool } from "../accounts.ts"
import { harness, runStamp } from "../harness.ts"
import { createBenchDatabase, pgSession } from "../pg.ts"
import { benchDir } from "../proc.ts"
import { stormChecks } from "../storm/checks.ts"
import { describe, type LogicalCall, makeClients } from "../storm/clients.ts"
import { type Instance, pingRedis, snapshotApp, startCluster } from "../storm/cluster.ts"
import { seeded } from "../storm/options.ts"
import { sampleWorld } from "../world.ts"
import { startHaproxy } from "./haproxy.ts"

const usage = `npm run rolling -- [options]

Starts haproxy (health checks on /readyz) in front of N instances on one fresh PostgreSQL database
and one Redis; drives steady metered load through it, each call retried with its Idempotency-Key
on a 5xx, a 429 or a connection error; restarts each instance in turn with SIGTERM (it drains, then
closes); then reports failed calls, the ledger invariants and p99 latency during the restarts, and
exits 1 unless there were no failed calls and no drift.

  --instances N     instances behind haproxy (default 3)
  --concurrency C   logical calls in flight (default 12; 6 with --short)
  --drain S         SHUTDOWN_DRAIN_SECONDS of the instances (default 5; 2 with --short)
  --settle S        seconds of load before the first restart, between restarts and after the last
                    (default 10; 4 with --short)
  --short           the CI form: well under 2 minutes
  --pg URL          PostgreSQL server (default postgres://postgres@127.0.0.1:5432/postgres, or
                    ROLLING_DATABASE_URL); a database svc_rolling_<ts> is created and dropped
  --redis URL       Redis (default redis://127.0.0.1:6379, or ROLLING_REDIS_URL)
`

const { log, cleanups, cleanUp } = harness("rolling", "run")

const parse = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      instances: { type: "string" },
      concurrency: { type: "string" },
      drain: { type: "string" },
      settle: { type: "string" },
      short: { type: "boolean" },
      pg: { type: "string" },
      redis: { type: "string" },
      help: { type: "boolean", short: "h" }
    },
    strict: true
  })
  if (values.help === true) return "help" as const
  const short = values.short === true
  const number = (name: string, text: string | undefined, fallback: number) => {
    if (text === undefined) return fallback
    const n = Number(text)
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number of 0 or more, got ${text}`)
    return n
  }
  return {
    short,
    instances: Math.max(2, Math.floor(number("instances", values.instances, 3))),
    concurrency: Math.max(1, Math.floor(number("concurrency", values.concurrency, short ? 6 : 12))),
    drain: number("drain", values.drain, short ? 2 : 5),
    settle: number("settle", values.settle, short ? 4 : 10),
    pg: values.pg ?? process.env.ROLLING_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    redis: values.redis ?? process.env.ROLLING_REDIS_URL ?? "redis://127.0.0.1:6379"
  }
}

type Options = Exclude<ReturnType<typeof parse>, "help">

interface Restart {
  readonly instance: number
  /** Seconds since the load began. */
  readonly signalledAt: number
  readonly exitedAt: number
  readonly readyAt: number
  readonly exitCode: number | null
}

const percentile = (values: ReadonlyArray<number>, p: number) => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** From the first attempt's sending to the final answer, retries and their waits included. */
const callMs = (call: LogicalCall) => {
  const first = call.attempts[0]
  const final = call.attempts.findLast((attempt) => attempt.phase === "load")
  return first === undefined || final === undefined ? 0 : (final.at - first.at) * 1000 + final.ms
}

/** A call the client could not retry to success: no final answer, or a final 5xx, timeout or connection error. */
const failed = (call: LogicalCall) =>
  call.final === undefined || !/^(2|4)\d\d/.test(call.final) || call.final.startsWith("429")

const rolling = async (options: Options, stamp: string): Promise<boolean> => {
  await pingRedis(options.redis)
  const database = await createBenchDatabase(options.pg, stamp, "svc_rolling")
  cleanups.push(database.drop)
  log(`postgres: created ${database.name}`)
  const app = snapshotApp(`rolling-${stamp}`)
  cleanups.push(app.remove)
  const leaseSeconds = 15
  const cluster = await startCluster({
    stamp: `rolling-${stamp}`,
    app: app.dir,
    instances: options.instances,
    databaseUrl: database.url,
    redisUrl: options.redis,
    leaseSeconds,
    log,
    env: { SHUTDOWN_DRAIN_SECONDS: String(options.drain), LOG_LEVEL: "Info" }
  })
  cleanups.push(cluster.stop)
  const haproxy = await startHaproxy(`rolling-${stamp}`, cluster.instances)
  cleanups.push(haproxy.stop)
  const db = pgSession(database.url)
  cleanups.push(db.close)
  log(
    `haproxy ${haproxy.url} in front of ${cluster.instances.map((i) => `${i.url} (pid ${i.service.pid})`).join(", ")}`
  )

  const admin = cluster.admin()
  const block = Math.floor(Math.random() * 200) + 16
  const paid = await pool(
    Array.from(
      { length: options.concurrency * 4 },
      (_, i) => `10.${block}.${Math.floor(i / 250)}.${(i % 250) + 1}`
    ),
    4,
    async (ip) => {
      const account = await mint(haproxy.url, ip)
      await admin.production(account.accountId, 1_000_000)
      return account
    }
  )
  log(`${paid.length} production accounts minted through haproxy`)

  // The clients see one address, haproxy's: its retries are theirs to make.
  const balancer: Instance = { ...cluster.instances[0]!, index: 0, url: haproxy.url }
  const loadBegun = performance.now()
  const since = () => (performance.now() - loadBegun) / 1000
  const clients = makeClients({
    instances: [balancer],
    paid,
    trial: [],
    sample: sampleWorld(),
    leaseSeconds,
    begun: loadBegun,
    runTag: `rolling-${stamp}`
  })
  const restarts: Array<Restart> = []
  const restartAll = async () => {
    await sleep(options.settle * 1000)
    for (const instance of cluster.instances) {
      const signalledAt = since()
      log(`i${instance.index + 1}: SIGTERM`)
      instance.service.signal("SIGTERM")
      await instance.service.exited
      const exitedAt = since()
      const exitCode = instance.service.exitCode()
      log(
        `i${instance.index + 1}: exited with ${exitCode} after ${(exitedAt - signalledAt).toFixed(1)} s; starting it again`
      )
      await cluster.restart(instance)
      // Ready to the instance; haproxy takes it back after two good checks (1 s).
      await sleep(1500)
      restarts.push({ instance: instance.index + 1, signalledAt, exitedAt, readyAt: since(), exitCode })
      log(`i${instance.index + 1}: back (pid ${instance.service.pid})`)
      await sleep(options.settle * 1000)
    }
  }
  let done = false
  const restarting = restartAll().finally(() => {
    done = true
  })
  log(`load: ${options.concurrency} clients through haproxy while each instance restarts in turn`)
  const hardEnd = () => (done ? Date.now() + 60_000 : Number.MAX_SAFE_INTEGER)
  await Promise.all([
    restarting,
    ...Array.from({ length: options.concurrency }, async (_, w) => {
      const random = seeded(w + 1)
      // Keep sending until the restarts are over; each call may then finish.
      while (!done) await clients.load(random, Date.now() + 1000, hardEnd())
    })
  ])
  const loadSeconds = since()
  // Anything left open is asked again (none should be); then the ledger.
  const random = seeded(99)
  const reopened = await clients.reconcile(random, options.concurrency, Date.now() + 30_000)
  const replays = await clients.finalReplays(random, options.concurrency, Date.now() + 30_000)
  await sleep(1000)
  const checks = await stormChecks(db, clients.calls)

  const calls = clients.calls
  const failures = calls.filter(failed)
  const retried = calls.filter((call) => call.attempts.filter((a) => a.phase === "load").length > 1)
  const window = (call: LogicalCall) => {
    const at = call.attempts[0]?.at ?? 0
    return restarts.some((restart) => at >= restart.signalledAt && at <= restart.readyAt)
  }
  const during = calls.filter(window).map(callMs)
  const outside = calls.filter((call) => !window(call)).map(callMs)
  const retriedAttempts = calls
    .flatMap((call) => call.attempts.filter((a) => a.phase === "load").slice(0, -1))
    .reduce<Record<string, number>>((counts, attempt) => {
      const what = describe(attempt)
      counts[what] = (counts[what] ?? 0) + 1
      return counts
    }, {})
  const drift = checks.filter((check) => !check.pass)
  const cleanExits = restarts.filter((restart) => restart.exitCode === 0).length
  const lines = [
    `rolling restart of ${app.commit}${app.dirty ? " plus uncommitted changes to src/" : ""}: haproxy in front of ${options.instances} instances on PostgreSQL (${database.name}) and Redis, ${options.concurrency} clients, drain ${options.drain} s${options.short ? " (--short)" : ""}`,
    ...restarts.map(
      (restart) =>
        `  i${restart.instance}: SIGTERM at ${restart.signalledAt.toFixed(1)} s, exited ${restart.exitCode} after ${(restart.exitedAt - restart.signalledAt).toFixed(1)} s, back in rotation at ${restart.readyAt.toFixed(1)} s`
    ),
    `calls: ${calls.length} in ${loadSeconds.toFixed(0)} s, ${retried.length} needed a retry (${
      Object.entries(retriedAttempts)
        .map(([what, n]) => `${n} × ${what}`)
        .join(", ") || "none"
    }), ${reopened} left open for the reconcile, ${replays} asked again and replayed`,
    `failed calls (a 5xx or a connection error the client could not retry to success): ${failures.length}`,
    ...failures.slice(0, 5).map((call) => `  ${call.idem}: ${call.attempts.map(describe).join(" | ")}`),
    `ledger: ${drift.length === 0 ? `no drift (${checks.length} invariants hold)` : `${drift.length} of ${checks.length} invariants fail`}`,
    ...drift.map(
      (check) =>
        `  FAIL ${check.name}: ${check.detail}${check.examples.length > 0 ? `\n    ${check.examples.join("\n    ")}` : ""}`
    ),
    `latency of a call, retries included: p50 ${percentile(during, 50).toFixed(0)} ms, p99 ${percentile(during, 99).toFixed(0)} ms during the restarts (${during.length} calls); p50 ${percentile(outside, 50).toFixed(0)} ms, p99 ${percentile(outside, 99).toFixed(0)} ms outside them (${outside.length} calls)`,
    `exits: ${cleanExits} of ${restarts.length} instances exited 0 on SIGTERM`
  ]
  const pass = failures.length === 0 && drift.length === 0 && cleanExits === restarts.length
  mkdirSync(benchDir, { recursive: true })
  const file = join(benchDir, `rolling-${stamp}.json`)
  writeFileSync(
    file,
    `${JSON.stringify({ kind: "rolling", options, restarts, checks, failures: failures.length, p99DuringMs: percentile(during, 99), p99OutsideMs: percentile(outside, 99), calls }, null, 1)}\n`
  )
  process.stdout.write(`\n${lines.join("\n")}\n\n${pass ? "PASS" : "FAIL"}; every call in ${file}\n`)
  return pass
}

const main = async (): Promise<number> => {
  const options = parse(process.argv.slice(2))
  if (options === "help") {
    process.stdout.write(usage)
    return 0
  }
  const stamp = runStamp()
  try {
    return (await rolling(options, stamp)) ? 0 : 1
  } finally {
    await cleanUp()
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(error instanceof Error ? (error.stack ?? error.message) : String(error))
    process.exit(1)
  }
)
