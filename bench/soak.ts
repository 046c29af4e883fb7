import { randomUUID } from "node:crypto"
import { setTimeout as sleep } from "node:timers/promises"
import { operations } from "../src/operations/registry.ts"
import { type BenchAccount, ipOf, mint, paidAccounts, pool } from "./accounts.ts"
import { type Faults, startFaults } from "./faults.ts"
import { type Check, httpInvariants, ledgerInvariants, reservedCalls, runningKeys } from "./invariants.ts"
import type { PgSession } from "./pg.ts"
import { call, type Reply, type Service } from "./service.ts"
import { builders, query, type Sample, sampleWorld } from "./world.ts"

export interface SoakResult {
  readonly store: string
  readonly seconds: number
  readonly workers: number
  readonly requests: number
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** Responses by kind of request, then by status. */
  readonly statuses: Record<string, Record<string, number>>
  /** Metered calls by operation, then by status. */
  readonly operations: Record<string, Record<string, number>>
  readonly skippedOperations: ReadonlyArray<string>
  readonly faults: ReadonlyArray<string>
  readonly memory: {
    readonly samplesMb: ReadonlyArray<number>
    readonly firstQuarterMb: number
    readonly lastQuarterMb: number
    readonly growthPercent: number
  }
  readonly checks: ReadonlyArray<Check>
  readonly pass: boolean
}

interface Op {
  readonly id: string
  readonly path: string
  readonly common: boolean
  readonly params: (i: number) => Record<string, string>
}

/** Metered calls of one account at least this far apart: 600 a minute is the production limit. */
const perAccountGapMs = 150

/** "a | b | b | b" as "a | b x3". */
const collapse = (lines: ReadonlyArray<string>): string => {
  const runs: Array<[string, number]> = []
  for (const line of lines) {
    const last = runs.at(-1)
    if (last !== undefined && last[0] === line) last[1] += 1
    else runs.push([line, 1])
  }
  return runs.map(([line, n]) => (n === 1 ? line : `${line} x${n}`)).join(" | ")
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

const average = (values: ReadonlyArray<number>) =>
  values.length === 0 ? 0 : values.reduce((sum, v) => sum + v, 0) / values.length

export const soakOperations = (sample: Sample) => {
  const supported: Array<Op> = []
  const skipped: Array<string> = []
  for (const operation of operations) {
    const build = builders[operation.id]
    if (build === undefined) skipped.push(`${operation.id} (no request builder in bench/world.ts)`)
    else {
      supported.push({
        id: operation.id,
        path: `/v1${operation.path}`,
        common: operation.common,
        params: (i) => build(sample, i)
      })
    }
  }
  return { supported, skipped }
}

/**
 * A steady mixed load: every operation of the registry, paid and trial keys, retries that reuse
 * their Idempotency-Key (plain repeats, after an abandoned request, after CONCURRENCY_LIMIT),
 * reused keys with other arguments, two calls at once on one account, free reads and invalid
 * input, while the faults toggle. Then the invariants.
 */
export const soak = async (options: {
  readonly service: Service
  readonly seconds: number
  readonly workers: number
  readonly accounts: number
  readonly db: PgSession | undefined
  readonly log: (line: string) => void
}): Promise<SoakResult> => {
  const { service, log } = options
  const base = service.url
  const sample = sampleWorld()
  const { supported, skipped } = soakOperations(sample)
  const paid = await paidAccounts(base, service.admin, options.accounts, 1_000_000, 91)
  // Trial keys share 200 free credits per IP and day: five keys (the mint limit) on each of four IPs.
  const trial = await pool(
    Array.from({ length: 20 }, (_, i) => ipOf(92, Math.floor(i / 5))),
    4,
    (ip) => mint(base, ip)
  )
  log(`soak: ${paid.length} production and ${trial.length} trial accounts, ${supported.length} operations`)

  const statuses: Record<string, Record<string, number>> = {}
  const byOperation: Record<string, Record<string, number>> = {}
  const latencies: Array<number> = []
  const seen = new Map<string, { charged: number }>()
  const violations: Array<string> = []
  /** What the clients saw for each Idempotency-Key, to explain a key the ledger still holds. */
  const history = new Map<string, Array<string>>()
  const remember = (idem: string | undefined, line: string) => {
    if (idem !== undefined) history.set(idem, [...(history.get(idem) ?? []), line])
  }
  const bump = (table: Record<string, Record<string, number>>, row: string, status: number | string) => {
    const counts = table[row] ?? {}
    counts[status] = (counts[status] ?? 0) + 1
    table[row] = counts
  }
  const tally = (kind: string, status: number | string) => bump(statuses, kind, status)
  let requests = 0
  let counter = 0

  const send = async (
    kind: string,
    account: BenchAccount,
    path: string,
    idempotencyKey?: string,
    signal?: AbortSignal
  ): Promise<Reply | undefined> => {
    const started = performance.now()
    requests += 1
    try {
      const reply = await call(base, path, {
        key: account.key,
        ip: account.ip,
        idempotencyKey,
        ...(signal === undefined ? {} : { signal })
      })
      latencies.push(performance.now() - started)
      const status = reply.status === 200 ? 200 : `${reply.status} ${reply.body?.code ?? ""}`.trim()
      tally(kind, status)
      remember(
        idempotencyKey,
        `${kind}: ${status}${reply.status === 429 ? ` (${reply.body?.message ?? ""})` : ""}`
      )
      if (
        reply.status === 200 &&
        reply.body?.receipt?.id !== undefined &&
        reply.body.receipt.replayed !== true
      ) {
        seen.set(reply.body.receipt.id, { charged: reply.body.receipt.charged })
      }
      return reply
    } catch {
      tally(kind, signal?.aborted === true ? "aborted" : "socket error")
      remember(idempotencyKey, `${kind}: ${signal?.aborted === true ? "aborted" : "socket error"}`)
      return undefined
    }
  }

  const metered = (op: Op, paidKey: boolean) => {
    const i = counter++
    const realtime = paidKey && op.common && i % 5 === 0
    return `${op.path}${query({ ...op.params(i), ...(realtime ? { freshness: "realtime" } : {}) })}`
  }

  const nextFree = new Map<string, number>()
  const ready = async (account: BenchAccount) => {
    const wait = (nextFree.get(account.key) ?? 0) - Date.now()
    if (wait > 0) await sleep(wait)
    nextFree.set(account.key, Date.now() + perAccountGapMs)
  }

  /** Resends with the same key until the call has an answer that is not "still running". */
  const until = async (kind: string, account: BenchAccount, path: string, idem: string) => {
    for (let attempt = 0; attempt < 10; attempt++) {
      await ready(account)
      const reply = await send(kind, account, path, idem)
      if (reply !== undefined && reply.status !== 429) return reply
      await sleep(300)
    }
    return undefined
  }

  const deadline = Date.now() + options.seconds * 1000
  const worker = async (w: number) => {
    const mine = paid.filter((_, i) => i % options.workers === w)
    const trialKey = trial[w % trial.length]!
    let last: { account: BenchAccount; op: Op; path: string; idem: string; receipt: string } | undefined
    while (Date.now() < deadline && mine.length > 0) {
      const account = mine[Math.floor(Math.random() * mine.length)]!
      const op = supported[Math.floor(Math.random() * supported.length)]!
      const roll = Math.random()
      await ready(account)
      if (roll < 0.55) {
        const path = metered(op, true)
        const idem = randomUUID()
        const reply = await send(`call`, account, path, idem)
        bump(byOperation, op.id, reply === undefined ? "socket error" : reply.status)
        if (reply?.status === 200) last = { account, op, path, idem, receipt: reply.body.receipt.id }
      } else if (roll < 0.65 && last !== undefined) {
        await ready(last.account)
        const reply = await send("repeat (same key, same args)", last.account, last.path, last.idem)
        if (reply?.status === 200 && reply.body.receipt.id !== last.receipt) {
          violations.push(`a replay answered receipt ${reply.body.receipt.id}, not ${last.receipt}`)
        }
      } else if (roll < 0.7) {
        const path = metered(op, true)
        const idem = randomUUID()
        await send("abandoned", account, path, idem, AbortSignal.timeout(1 + Math.floor(Math.random() * 300)))
        await until("retry after abandon", account, path, idem)
      } else if (roll < 0.75 && last !== undefined) {
        // Another operation, so the arguments (and the fingerprint) surely differ.
        const other = metered(supported[(supported.indexOf(last.op) + 1) % supported.length]!, true)
        await ready(last.account)
        const reply = await send("reused key, other args (409 expected)", last.account, other, last.idem)
        if (reply?.status === 200) {
          violations.push(`Idempotency-Key ${last.idem} of ${last.path} was accepted again for ${other}`)
        }
      } else if (roll < 0.8) {
        const [a, b] = [randomUUID(), randomUUID()]
        const [pathA, pathB] = [metered(op, true), metered(op, true)]
        const replies = await Promise.all([send("pair", account, pathA, a), send("pair", account, pathB, b)])
        for (const [i, reply] of replies.entries()) {
          if (reply?.status === 429)
            await until("retry after CONCURRENCY_LIMIT", account, i === 0 ? pathA : pathB, i === 0 ? a : b)
        }
      } else if (roll < 0.85) {
        await send("free read", account, Math.random() < 0.5 ? "/v1/usage" : "/v1/receipts?limit=5")
      } else if (roll < 0.9) {
        await send(
          "invalid input (400 expected)",
          account,
          `/v1/profnet/profiles${query({ identifier: "x", sections: "bogus" })}`
        )
      } else {
        await ready(trialKey)
        const path = metered(op, false)
        await send("trial call", trialKey, path, Math.random() < 0.5 ? randomUUID() : undefined)
      }
    }
  }

  const rss: Array<number> = []
  const sampler = setInterval(() => {
    const memory = service.memory()
    if (memory !== undefined) rss.push(memory.rssMb)
  }, 1000)
  const faults: Faults = startFaults({ service, log })
  const started = performance.now()
  try {
    await Promise.all(Array.from({ length: options.workers }, (_, w) => worker(w)))
  } finally {
    clearInterval(sampler)
    await faults.stop()
  }
  const seconds = (performance.now() - started) / 1000
  log(`soak: ${requests} requests in ${seconds.toFixed(0)} s; checking invariants`)
  await sleep(1500)

  const quarter = Math.max(1, Math.floor(rss.length / 4))
  const firstQuarterMb = average(rss.slice(0, quarter))
  const lastQuarterMb = average(rss.slice(-quarter))
  const growthPercent = firstQuarterMb === 0 ? 0 : ((lastQuarterMb - firstQuarterMb) / firstQuarterMb) * 100
  const half = rss.slice(Math.floor(rss.length / 2))
  const secondHalf = `over the second half ${(half[0] ?? 0).toFixed(0)} -> ${(half.at(-1) ?? 0).toFixed(0)} MiB`
  const stillRunning = options.db === undefined ? [] : await runningKeys(options.db, Date.now())
  const stillReserved = options.db === undefined ? [] : await reservedCalls(options.db, Date.now())
  const checks: Array<Check> = [
    {
      name: "replays answer the original receipt; a key reused with other arguments is refused",
      pass: violations.length === 0,
      detail: violations.length === 0 ? "all held" : violations.slice(0, 3).join("; ")
    },
    ...(await httpInvariants(
      base,
      [...paid, ...trial].map((account) => account.key),
      seen
    )),
    ...(options.db === undefined ? [] : await ledgerInvariants(options.db)),
    {
      name: "memory: last quarter's RSS at most 50% above the first quarter's",
      pass: growthPercent <= 50,
      detail: `${firstQuarterMb.toFixed(0)} MiB -> ${lastQuarterMb.toFixed(0)} MiB (${growthPercent.toFixed(0)}%); ${secondHalf}`
    },
    ...stillRunning.slice(0, 3).map((row) => ({
      name: `Idempotency-Key ${row.idem_key} is still 'running' (lease ${Math.round(row.lease_left_ms / 1000)} s left)`,
      pass: false,
      detail: `the clients saw: ${collapse(history.get(row.idem_key) ?? ["nothing"])}`
    })),
    ...stillReserved.slice(0, 3).map((row) => ({
      name: `call ${row.id} is still 'reserved' (lease ${Math.round(row.lease_left_ms / 1000)} s left)`,
      pass: false,
      detail: `Idempotency-Key ${row.idempotency_key}; the clients saw: ${collapse(history.get(row.idempotency_key ?? "") ?? ["nothing"])}`
    }))
  ]
  const sorted = [...latencies].sort((a, b) => a - b)
  return {
    store: service.store,
    seconds,
    workers: options.workers,
    requests,
    rps: requests / seconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    statuses,
    operations: byOperation,
    skippedOperations: skipped,
    faults: faults.report(),
    memory: { samplesMb: rss, firstQuarterMb, lastQuarterMb, growthPercent },
    checks,
    pass: checks.every((c) => c.pass)
  }
}
