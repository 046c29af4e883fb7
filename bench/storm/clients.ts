import { setTimeout as sleep } from "node:timers/promises"
import type { BenchAccount } from "../accounts.ts"
import type { PgSession } from "../pg.ts"
import { soakOperations } from "../soak.ts"
import { query, type Sample } from "../world.ts"
import type { Instance } from "./cluster.ts"
import type { Random } from "./options.ts"

export type Phase = "load" | "replay" | "reconcile" | "final replay"

/** One HTTP answer (or its absence) to one attempt of a logical call. */
export interface Attempt {
  readonly phase: Phase
  readonly instance: number
  /** Seconds since the load began, when it was sent. */
  readonly at: number
  readonly ms: number
  readonly status: number | "timeout" | "network"
  readonly code?: string
  /** X-Receipt-Id, X-Credits-Charged and Idempotent-Replayed of a 200, and the body's receipt charge. */
  readonly receipt?: string
  readonly charged?: number
  readonly bodyCharged?: number
  readonly replayed?: boolean
  /** retry_after_seconds of a problem that has one. */
  readonly retryAfterSeconds?: number
}

/** One call as a client means it: one Idempotency-Key, retried until it has a final answer. */
export interface LogicalCall {
  readonly n: number
  readonly kind: "paid" | "trial"
  readonly accountId: string
  /** The spend key it is sent with: the account's own, or a child key of it. */
  readonly key: string
  readonly ip: string
  readonly idem: string
  readonly path: string
  readonly attempts: Array<Attempt>
  /** The final answer of the load phase or of the reconcile: "200", "402 TRIAL_CAP_EXCEEDED", ... */
  final: string | undefined
}

/**
 * Network errors, timeouts, 5xx and 429 (CONCURRENCY_LIMIT, RATE_LIMITED) are retried; the rest is
 * final. How long to wait first: none after a timeout, the answer's retry_after_seconds (at most 2 s)
 * after a 429, and a backoff from 200 ms doubling up to 2 s after a network error or a 5xx.
 */
const retryAfterMs = (attempt: Attempt, tries: number): number | "final" => {
  if (attempt.status === "timeout") return 0
  if (attempt.status === 429) return Math.min(2, attempt.retryAfterSeconds ?? 1) * 1000
  if (attempt.status === "network" || attempt.status >= 500) return Math.min(2000, 200 * 2 ** tries)
  return "final"
}

export const describe = (attempt: Attempt): string =>
  typeof attempt.status === "number"
    ? `${attempt.status}${attempt.code === undefined ? "" : ` ${attempt.code}`}`
    : attempt.status

/** A key's cap in the storm: small enough that capped keys reach it within the load. */
export const stormCap = { parent: 60, child: 25 } as const

/**
 * Spend caps on a quarter of the paid accounts' keys (a day cap on half of them, a total cap on the
 * rest), each with a child key made through the API with the capped key, its own cap inside the
 * parent's. The caps and the owner's grant of delegation (`may_delegate`) are written to the
 * database, as the top-up settings are, and those accounts marked claimed (an unclaimed account's
 * keys never delegate; the storm's accounts have no owner whose management token could set them
 * through the API). Returns the child keys, under their account, for the clients to spend with
 * beside their parents.
 */
export const capSomeKeys = async (
  db: PgSession,
  baseUrl: string,
  paid: ReadonlyArray<BenchAccount>
): Promise<Array<BenchAccount>> => {
  const chosen = paid.filter((_, i) => i % 4 === 1)
  const children: Array<BenchAccount> = []
  for (const [i, account] of chosen.entries()) {
    await db.query(
      `UPDATE accounts SET claimed_at = created_at, email = $2 WHERE id = $1 AND claimed_at IS NULL`,
      [account.accountId, `storm-${account.accountId}@storm.invalid`]
    )
    await db.query(
      `UPDATE api_keys SET spend_cap_credits = $1, cap_period = $2, may_delegate = true
       WHERE account_id = $3 AND revoked_at IS NULL AND parent_key_id IS NULL`,
      [stormCap.parent, i % 2 === 0 ? "day" : "total", account.accountId]
    )
    const response = await fetch(`${baseUrl}/v1/keys/child`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${account.key}`,
        "content-type": "application/json",
        "x-forwarded-for": account.ip
      },
      body: JSON.stringify({ label: "storm child", spend_cap_credits: stormCap.child })
    })
    const body = (await response.json()) as { key?: string }
    if (response.status !== 201 || body.key === undefined)
      throw new Error(
        `a child key of ${account.accountId} failed: ${response.status} ${JSON.stringify(body)}`
      )
    children.push({ accountId: account.accountId, key: body.key, ip: account.ip })
  }
  return children
}

/**
 * Clients of the storm: `concurrency` workers, each sending logical calls (paid accounts and, one
 * in seven, trial keys on a few shared IPs) to a random instance and retrying every one with the
 * SAME Idempotency-Key on another instance until it has a final answer.
 */
export const makeClients = (options: {
  readonly instances: ReadonlyArray<Instance>
  readonly paid: ReadonlyArray<BenchAccount>
  readonly trial: ReadonlyArray<BenchAccount>
  /** Child keys of some paid accounts: half of those accounts' calls are sent with them. */
  readonly children?: ReadonlyArray<BenchAccount>
  readonly sample: Sample
  readonly leaseSeconds: number
  readonly begun: number
  readonly runTag: string
}) => {
  const { instances } = options
  const { supported } = soakOperations(options.sample)
  const calls: Array<LogicalCall> = []
  const childOf = new Map((options.children ?? []).map((child) => [child.accountId, child.key]))
  // A client waits a little longer than the lease before it takes an attempt for lost, so its retry
  // finds the stalled holder's claim expired and takes the key over.
  const attemptTimeoutMs = (options.leaseSeconds + 2) * 1000
  const nextFree = new Map<string, number>()
  // Under the plans' per-minute limits: production 600 (one per 100 ms), trial 30 (one per 2 s).
  const gapMs = (call: LogicalCall) => (call.kind === "paid" ? 120 : 2100)

  const send = async (call: LogicalCall, phase: Phase, instance: Instance): Promise<Attempt> => {
    const wait = (nextFree.get(call.accountId) ?? 0) - Date.now()
    nextFree.set(call.accountId, Math.max(Date.now(), nextFree.get(call.accountId) ?? 0) + gapMs(call))
    if (wait > 0) await sleep(wait)
    const sent = performance.now()
    const base = { phase, instance: instance.index, at: (sent - options.begun) / 1000 }
    let attempt: Attempt
    try {
      const response = await fetch(`${instance.url}${call.path}`, {
        headers: {
          authorization: `Bearer ${call.key}`,
          "idempotency-key": call.idem,
          "x-forwarded-for": call.ip
        },
        signal: AbortSignal.timeout(attemptTimeoutMs)
      })
      const text = await response.text()
      let body: any
      try {
        body = JSON.parse(text)
      } catch {}
      const ms = performance.now() - sent
      if (response.status === 200) {
        const receipt = response.headers.get("x-receipt-id") ?? undefined
        const charged = response.headers.get("x-credits-charged")
        attempt = {
          ...base,
          ms,
          status: 200,
          ...(receipt === undefined ? {} : { receipt }),
          ...(charged === null ? {} : { charged: Number(charged) }),
          ...(typeof body?.receipt?.charged === "number" ? { bodyCharged: body.receipt.charged } : {}),
          replayed: response.headers.get("idempotent-replayed") === "true"
        }
      } else {
        const retryAfter = Number(body?.retry_after_seconds)
        attempt = {
          ...base,
          ms,
          status: response.status,
          ...(typeof body?.code === "string" ? { code: body.code } : {}),
          ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {})
        }
      }
    } catch (error) {
      const timedOut =
        error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")
      attempt = { ...base, ms: performance.now() - sent, status: timedOut ? "timeout" : "network" }
    }
    call.attempts.push(attempt)
    return attempt
  }

  /**
   * Attempts until a final answer, at most `maxAttempts`, each on another instance than the last;
   * a 429 waits its retry_after_seconds, capped at 2 s.
   */
  const drive = async (
    call: LogicalCall,
    phase: Phase,
    random: Random,
    maxAttempts: number,
    hardEnd: number
  ): Promise<Attempt | undefined> => {
    let at = random.int(instances.length)
    for (let i = 0; i < maxAttempts && Date.now() < hardEnd; i++) {
      const attempt = await send(call, phase, instances[at]!)
      const waitMs = retryAfterMs(attempt, i)
      if (waitMs === "final") return attempt
      await sleep(Math.min(waitMs + random.int(100), Math.max(0, hardEnd - Date.now())))
      if (instances.length > 1) at = (at + 1 + random.int(instances.length - 1)) % instances.length
    }
    return undefined
  }

  const newCall = (random: Random): LogicalCall => {
    const n = calls.length
    // An account that may call now (the plans' rate limits), so a slow trial key does not hold up a client.
    const ready = (list: ReadonlyArray<BenchAccount>) => {
      const now = Date.now()
      const free = list.filter((account) => (nextFree.get(account.accountId) ?? 0) <= now)
      return free.length > 0 ? random.pick(free) : undefined
    }
    const trialAccount = random.next() < 1 / 7 ? ready(options.trial) : undefined
    const trial = trialAccount !== undefined
    const account = trialAccount ?? ready(options.paid) ?? random.pick(options.paid)
    const op = random.pick(supported)
    const realtime = !trial && op.common && random.next() < 0.5
    const child = childOf.get(account.accountId)
    const call: LogicalCall = {
      n,
      kind: trial ? "trial" : "paid",
      accountId: account.accountId,
      key: child !== undefined && random.next() < 0.5 ? child : account.key,
      ip: account.ip,
      idem: `storm-${options.runTag}-${n}`,
      path: `${op.path}${query({ ...op.params(n), ...(realtime ? { freshness: "realtime" } : {}) })}`,
      attempts: [],
      final: undefined
    }
    calls.push(call)
    return call
  }

  /** The load: logical calls until `until`; a call under way may run on until `hardEnd`. */
  const load = async (random: Random, until: number, hardEnd: number) => {
    while (Date.now() < until) {
      const call = newCall(random)
      const final = await drive(call, "load", random, 15, hardEnd)
      if (final !== undefined) call.final = describe(final)
      // Now and then the client asks again right away (a replay, on any instance).
      if (final?.status === 200 && random.next() < 0.1) await drive(call, "replay", random, 10, hardEnd)
      await sleep(random.int(30))
    }
  }

  /** `task` over `items`, `width` at a time. */
  const lanes = async <A>(items: ReadonlyArray<A>, width: number, task: (item: A) => Promise<void>) => {
    let next = 0
    await Promise.all(
      Array.from({ length: width }, async () => {
        while (next < items.length) await task(items[next++]!)
      })
    )
  }

  /** Calls left without a final answer are asked again with their key, as a real client would. */
  const reconcile = async (random: Random, width: number, hardEnd: number) => {
    const open = calls.filter((call) => call.final === undefined)
    await lanes(open, width, async (call) => {
      const final = await drive(call, "reconcile", random, 8, hardEnd)
      if (final !== undefined) call.final = describe(final)
    })
    return open.length
  }

  /**
   * Every call that had a 200 and took more than one attempt (or crossed chaos), and one in ten of
   * the rest, asked once more with its key: each must replay the same receipt.
   */
  const finalReplays = async (random: Random, width: number, hardEnd: number) => {
    const chosen = calls.filter(
      (call) =>
        call.attempts.some((attempt) => attempt.status === 200) &&
        (call.attempts.length > 1 || random.next() < 0.1)
    )
    await lanes(chosen, width, async (call) => {
      await drive(call, "final replay", random, 8, hardEnd)
    })
    return chosen.length
  }

  return { calls, load, reconcile, finalReplays, attemptTimeoutMs }
}
