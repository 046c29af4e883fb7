// `npm run storm`: several instances on one PostgreSQL and Redis, concurrent calls retried with
// their Idempotency-Key across instances, faults, kill -9, a stall past the lease, then the ledger
// invariants. See README.md, "Storm".
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { type BenchAccount, mint, pool } from "../accounts.ts"
import { harness, runStamp } from "../harness.ts"
import { createBenchDatabase, pgSession } from "../pg.ts"
import { benchDir } from "../proc.ts"
import { sampleWorld } from "../world.ts"
import { runChaos } from "./chaos.ts"
import { stormChecks } from "./checks.ts"
import { capSomeKeys, makeClients, stormCap } from "./clients.ts"
import { type Cluster, pingRedis, snapshotApp, startCluster } from "./cluster.ts"
import { parseStormOptions, type StormOptions, seeded, usage } from "./options.ts"
import { instanceLogs, stormReport } from "./report.ts"
import { startX402Chain, x402Payer, x402StormCheck } from "./x402Load.ts"

const { log, cleanups, cleanUp } = harness("storm", "storm")

/** Distinct client addresses for this run: the mint limit (5 per IP per hour) lives in the shared Redis. */
const addresses = (random: () => number) => {
  const a = 16 + Math.floor(random() * 200)
  const b = Math.floor(random() * 250)
  return (block: number, i: number) => `10.${a}.${(b + block) % 256}.${(i % 250) + 1}`
}

const accounts = async (cluster: Cluster, options: StormOptions) => {
  const base = cluster.instances[0]!.url
  const ip = addresses(Math.random)
  const admin = cluster.admin()
  const paid = await pool(
    Array.from({ length: options.concurrency * 4 }, (_, i) => ip(0, i)),
    4,
    async (address) => {
      const account = await mint(base, address)
      await admin.production(account.accountId, 1_000_000)
      return account
    }
  )
  // Four IPs with four trial keys each: the keys of one IP draw on one free budget at once.
  const trial: Array<BenchAccount> = await pool(
    Array.from({ length: 16 }, (_, i) => ip(1, Math.floor(i / 4))),
    4,
    (address) => mint(base, address)
  )
  return { paid, trial }
}

/**
 * Automatic top-up on a quarter of the paid accounts, at a line above any balance they reach: each
 * charge wants a top-up, and the local rail pays them at once, racing the charges, the kills and
 * the stalls, until the month's maximum (three flex packs) stops them. Written to the database: the
 * storm's accounts are unclaimed, so no management token could arm it through the API.
 */
const armTopups = async (db: ReturnType<typeof pgSession>, paid: ReadonlyArray<BenchAccount>) => {
  const flex = defaultPolicy.packs.find((pack) => pack.pack === "flex")!
  const chosen = paid.filter((_, i) => i % 4 === 0)
  for (const account of chosen)
    await db.query(
      `INSERT INTO topup_settings (account_id, enabled, pack, credits, price_usd_cents, below_credits,
         monthly_max_usd_cents, updated_at)
       VALUES ($1, true, 'flex', $2, $3, 1000000000, $4, $5)`,
      [account.accountId, flex.credits, flex.price_usd_cents, 3 * flex.price_usd_cents, Date.now()]
    )
  return chosen.length
}

/** The lease the instances really put on a reservation and on a claim (ms), read back from the rows. */
const observedLeases = async (db: ReturnType<typeof pgSession>) => {
  const rows = await db.query<{ calls: number | null; claims: number | null }>(
    `SELECT (SELECT max(lease_expires_at - created_at) FROM calls) AS calls,
            (SELECT max(lease_expires_at - created_at) FROM idempotency_keys) AS claims`
  )
  return { calls: Number(rows[0]?.calls ?? 0), claims: Number(rows[0]?.claims ?? 0) }
}

const storm = async (options: StormOptions, stamp: string): Promise<boolean> => {
  await pingRedis(options.redis)
  const database = await createBenchDatabase(options.pg, stamp, "svc_storm")
  cleanups.push(database.drop)
  log(`postgres: created ${database.name}`)
  const app = snapshotApp(stamp)
  cleanups.push(app.remove)
  const x402 = options.x402 ? await startX402Chain() : undefined
  if (x402 !== undefined) {
    cleanups.push(x402.chain.stop)
    log(`x402: anvil on ${x402.chain.rpcUrl}, token ${x402.chain.token}`)
  }
  const cluster = await startCluster({
    stamp,
    app: app.dir,
    instances: options.instances,
    databaseUrl: database.url,
    redisUrl: options.redis,
    leaseSeconds: options.leaseSeconds,
    log,
    ...(x402 === undefined ? {} : { env: x402.env })
  })
  cleanups.push(cluster.stop)
  const db = pgSession(database.url)
  cleanups.push(db.close)
  log(
    `${options.instances} instances up (${cluster.instances.map((i) => `${i.url} pid ${i.service.pid}`).join(", ")}), upstream ${cluster.upstream.url}`
  )
  const { paid, trial } = await accounts(cluster, options)
  const armed = await armTopups(db, paid)
  const children = await capSomeKeys(db, cluster.instances[0]!.url, paid)
  log(
    `${paid.length} production accounts (${armed} with automatic top-up, ${children.length} with a capped key of ${stormCap.parent} credits and a child key of ${stormCap.child}), ${trial.length} trial keys on 4 IPs`
  )

  const loadBegun = performance.now()
  const clients = makeClients({
    instances: cluster.instances,
    paid,
    trial,
    children,
    sample: sampleWorld(),
    leaseSeconds: options.leaseSeconds,
    begun: loadBegun,
    runTag: `${stamp}-${options.seed}`
  })
  const until = Date.now() + options.seconds * 1000
  const hardEnd = until + (2 * options.leaseSeconds + 10) * 1000
  const chaos = runChaos({
    cluster,
    leaseSeconds: options.leaseSeconds,
    restartPostgres: options.restartPostgres,
    pgCluster: options.pgCluster,
    pgUrl: options.pg,
    random: seeded(options.seed),
    until,
    begun: loadBegun,
    log
  })
  const agent =
    x402 === undefined
      ? undefined
      : x402Payer({
          chain: x402.chain,
          instances: cluster.instances,
          accounts: paid,
          random: seeded(options.seed + 402).next
        })
  log(
    `load: ${options.concurrency} clients for ${options.seconds} s, chaos running${agent === undefined ? "" : ", an agent paying with x402"}`
  )
  await Promise.all([
    chaos.done,
    agent?.run(until, hardEnd),
    ...Array.from({ length: options.concurrency }, (_, w) =>
      clients.load(seeded(options.seed * 31 + w + 1), until, hardEnd)
    )
  ])
  const loadSeconds = (performance.now() - loadBegun) / 1000

  // Let every lease lapse and every instance's sweeper (every 5 s) run, then ask the open calls again.
  const leases = await observedLeases(db)
  const leaseMs = Math.max(leases.calls, leases.claims, options.leaseSeconds * 1000)
  log(`load done; waiting ${((leaseMs + 6000) / 1000).toFixed(0)} s for leases to lapse and sweepers to run`)
  await sleep(leaseMs + 6000)
  const random = seeded(options.seed + 7)
  await clients.reconcile(random, options.concurrency, Date.now() + 30_000)
  const finalReplays = await clients.finalReplays(random, options.concurrency, Date.now() + 30_000)
  await sleep(1000)
  log("checking the invariants")
  const checks = await stormChecks(db, clients.calls)
  if (x402 !== undefined && agent !== undefined)
    checks.push(await x402StormCheck(db, x402.chain, agent.payments))

  const asked = options.leaseSeconds * 1000
  const leaseNote =
    leases.calls === asked && leases.claims === asked
      ? `lease: ${options.leaseSeconds} s on reservations and claims (read back from the rows)`
      : `WARNING: LEASE_SECONDS=${options.leaseSeconds} asked, but the instances leased reservations for ${leases.calls / 1000} s and claims for ${leases.claims / 1000} s: the stall did not outlast those leases`
  const report = stormReport({
    header: `storm of ${app.commit}${app.dirty ? " plus uncommitted changes to src/" : ""}: ${options.instances} instances on PostgreSQL (${database.name}) and Redis, ${options.seconds} s, concurrency ${options.concurrency}, lease ${options.leaseSeconds} s, client timeout ${clients.attemptTimeoutMs / 1000} s, seed ${options.seed}${options.restartPostgres ? ", PostgreSQL restarts" : ""}${options.short ? " (--short)" : ""}`,
    leaseNote,
    events: chaos.events,
    calls: clients.calls,
    loadSeconds,
    finalReplays,
    checks,
    logs: instanceLogs(join(benchDir, "logs"), `storm-${stamp}-i`)
  })
  mkdirSync(benchDir, { recursive: true })
  const file = join(benchDir, `storm-${stamp}.json`)
  writeFileSync(
    file,
    `${JSON.stringify({ kind: "storm", options, leases, events: chaos.events, checks, calls: clients.calls }, null, 1)}\n`
  )
  const pass = checks.every((check) => check.pass)
  process.stdout.write(
    `\n${report}\n\n${pass ? "PASS" : "FAIL"}: ${checks.filter((c) => !c.pass).length} of ${checks.length} invariants failed; every call and answer in ${file}\n`
  )
  return pass
}

const main = async (): Promise<number> => {
  const options = parseStormOptions(process.argv.slice(2))
  if (options === "help") {
    process.stdout.write(usage)
    return 0
  }
  const stamp = runStamp()
  try {
    return (await storm(options, stamp)) ? 0 : 1
  } finally {
    await cleanUp()
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(error instanceof Error ? (error.stack ?? error.message) : String(error))
    void cleanUp().finally(() => process.exit(1))
  }
)
