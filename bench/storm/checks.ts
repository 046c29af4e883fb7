import { defaultPolicy } from "../../src/domain/policy.ts"
import { type Check, ledgerInvariants } from "../invariants.ts"
import type { PgSession } from "../pg.ts"
import { type Attempt, describe, type LogicalCall } from "./clients.ts"

export interface StormCheck extends Check {
  /** Where it comes from: the storm's own list, or bench/invariants.ts (the soak's ledger checks). */
  readonly group: "storm" | "ledger"
  /** A few of the offending rows, with what the clients saw. */
  readonly examples: ReadonlyArray<string>
}

interface CallRow {
  readonly id: string
  readonly account_id: string
  readonly idempotency_key: string | null
  readonly state: string
  readonly charged: number
  readonly created_at: number
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** What the clients saw for a key, one attempt per entry: "i2 load timeout | i1 load 200 rcpt_.. 6cr". */
const history = (call: LogicalCall | undefined): string => {
  if (call === undefined) return "no client call has this key"
  const step = (attempt: Attempt) =>
    `i${attempt.instance + 1}@${attempt.at.toFixed(1)}s ${attempt.phase} ${describe(attempt)}${
      attempt.status === 200
        ? ` ${attempt.receipt ?? "(no receipt)"} charged ${attempt.charged ?? "?"}${attempt.replayed === true ? " replayed" : ""}`
        : ""
    }`
  const steps = call.attempts.map(step)
  const shown =
    steps.length <= 10 ? steps : [...steps.slice(0, 4), `(${steps.length - 8} more)`, ...steps.slice(-4)]
  return `${call.kind} ${call.idem} ${call.path}: ${shown.join(" | ")}`
}

/**
 * The ledger invariants the storm promises, read from the database after the leases lapsed and
 * the sweepers ran, and compared with what the clients saw.
 */
export const stormChecks = async (
  db: PgSession,
  calls: ReadonlyArray<LogicalCall>
): Promise<Array<StormCheck>> => {
  const checks: Array<StormCheck> = []
  const add = (name: string, bad: number, counts: string, examples: ReadonlyArray<string> = []) =>
    checks.push({
      group: "storm",
      name,
      pass: bad === 0,
      detail: counts,
      examples: bad === 0 ? [] : examples.slice(0, 5)
    })
  const byKey = new Map(calls.map((call) => [`${call.accountId} ${call.idem}`, call]))
  const rows = await db.query<CallRow>(
    "SELECT id, account_id, idempotency_key, state, charged, created_at FROM calls ORDER BY created_at"
  )
  const byId = new Map(rows.map((row) => [row.id, row]))
  const settled = rows.filter((row) => row.state === "settled")

  // 1. Balances
  const balances = await db.query<{ id: string; credited: number; left: number; charged: number }>(
    `SELECT a.id, COALESCE(e.credited, 0) AS credited, a.grant_credits + a.balance_credits AS left,
            COALESCE(c.charged, 0) AS charged
     FROM accounts a
     LEFT JOIN (SELECT account_id, SUM(credits) AS credited FROM credit_events GROUP BY account_id) e
       ON e.account_id = a.id
     LEFT JOIN (SELECT account_id, SUM(charged_grant + charged_balance) AS charged FROM calls
                WHERE state = 'settled' GROUP BY account_id) c ON c.account_id = a.id`
  )
  const differ = balances.filter((row) => Number(row.credited) - Number(row.left) !== Number(row.charged))
  const negative = balances.filter((row) => Number(row.left) < 0)
  add(
    "balance = credits - charges, and >= 0, per account",
    differ.length + negative.length,
    `${plural(balances.length, "account")}, ${differ.length} differ, ${negative.length} negative`,
    differ.map((row) => `${row.id}: credited ${row.credited}, left ${row.left}, charged ${row.charged}`)
  )

  // 2. Nothing left in flight
  const reserved = rows.filter((row) => row.state === "reserved")
  add(
    "no call left 'reserved'",
    reserved.length,
    `${reserved.length} of ${plural(rows.length, "call row")}`,
    reserved.map((row) => `${row.id}: ${history(byKey.get(`${row.account_id} ${row.idempotency_key}`))}`)
  )
  const claims = await db.query<{ account_id: string; idem_key: string; state: string }>(
    "SELECT account_id, idem_key, state FROM idempotency_keys"
  )
  const running = claims.filter((row) => row.state === "running")
  add(
    "no idempotency claim left 'running'",
    running.length,
    `${running.length} of ${plural(claims.length, "key")}`,
    running.map((row) => history(byKey.get(`${row.account_id} ${row.idem_key}`)))
  )

  // 3. One charge per key
  const receiptsOfKey = new Map<string, Array<CallRow>>()
  for (const row of settled) {
    if (row.idempotency_key === null) continue
    const key = `${row.account_id} ${row.idempotency_key}`
    receiptsOfKey.set(key, [...(receiptsOfKey.get(key) ?? []), row])
  }
  const doubled = [...receiptsOfKey.entries()].filter(([, list]) => list.length > 1)
  add(
    "at most one settled charge per (account, Idempotency-Key)",
    doubled.length,
    `${plural(receiptsOfKey.size, "key")} with a receipt, ${doubled.length} with more than one (${doubled.reduce((sum, [, list]) => sum + list.length - 1, 0)} extra receipts, ${doubled.reduce((sum, [, list]) => sum + list.slice(1).reduce((s, row) => s + Number(row.charged), 0), 0)} credits)`,
    doubled.map(
      ([key, list]) =>
        `${list.map((row) => `${row.id} charged ${row.charged}`).join(" + ")} for ${history(byKey.get(key))}`
    )
  )

  // 4. Every 200 has its one receipt, with the charge the client saw
  const seen = new Set<string>()
  const wrong200: Array<string> = []
  let fresh200 = 0
  let callsWith200 = 0
  let notOne = 0
  for (const call of calls) {
    const oks = call.attempts.filter((attempt) => attempt.status === 200)
    if (oks.length === 0) continue
    callsWith200 += 1
    const receipts = receiptsOfKey.get(`${call.accountId} ${call.idem}`) ?? []
    if (receipts.length !== 1) {
      notOne += 1
      wrong200.push(`${plural(receipts.length, "receipt")} in the ledger: ${history(call)}`)
    }
    for (const attempt of oks) {
      if (attempt.receipt !== undefined) seen.add(attempt.receipt)
      if (attempt.replayed === true) continue
      fresh200 += 1
      const row = attempt.receipt === undefined ? undefined : byId.get(attempt.receipt)
      const fault =
        row === undefined
          ? `no receipt ${attempt.receipt ?? "(no X-Receipt-Id)"}`
          : row.state !== "settled"
            ? `receipt ${row.id} is '${row.state}'`
            : row.account_id !== call.accountId || row.idempotency_key !== call.idem
              ? `receipt ${row.id} belongs to ${row.account_id} ${row.idempotency_key}`
              : Number(row.charged) !== attempt.charged || Number(row.charged) !== attempt.bodyCharged
                ? `receipt ${row.id} charged ${row.charged}, the client saw X-Credits-Charged ${attempt.charged} (body ${attempt.bodyCharged})`
                : undefined
      if (fault !== undefined) wrong200.push(`${fault}: ${history(call)}`)
    }
  }
  add(
    "every 200 (not replayed) has exactly one receipt, charged what X-Credits-Charged said",
    wrong200.length,
    `${plural(fresh200, "fresh 200")} on ${plural(callsWith200, "call")}, ${notOne} calls without exactly one receipt, ${wrong200.length - notOne} answers that disagree with the ledger`,
    wrong200
  )

  // 5. No charge without a 200
  const charged = settled.filter((row) => Number(row.charged) > 0)
  const unseen = charged.filter((row) => !seen.has(row.id))
  add(
    "no charge without a 200 (every charged receipt was answered to a client)",
    unseen.length,
    `${plural(charged.length, "charged receipt")}, ${unseen.length} no client saw (${unseen.reduce((sum, row) => sum + Number(row.charged), 0)} credits)`,
    unseen.map(
      (row) =>
        `${row.id} charged ${row.charged}: ${history(byKey.get(`${row.account_id} ${row.idempotency_key}`))}`
    )
  )

  // 6. Replays
  let replays = 0
  const badReplays: Array<string> = []
  for (const call of calls) {
    const oks = call.attempts.filter((attempt) => attempt.status === 200)
    const first = oks[0]
    for (const attempt of oks.slice(1)) {
      if (attempt.replayed === true) replays += 1
      const row = attempt.receipt === undefined ? undefined : byId.get(attempt.receipt)
      if (
        attempt.replayed !== true ||
        attempt.receipt !== first?.receipt ||
        attempt.charged !== 0 ||
        row === undefined ||
        Number(row.charged) !== attempt.bodyCharged
      ) {
        badReplays.push(history(call))
      }
    }
    // A first 200 that is a replay points at a charge the client never had first-hand: fine, if it is in the ledger.
    if (first?.replayed === true && (first.receipt === undefined || !byId.has(first.receipt))) {
      badReplays.push(history(call))
    }
  }
  add(
    "a key asked again after its 200 replays the same receipt and charges nothing",
    badReplays.length,
    `${plural(replays, "replay")} after a 200, ${badReplays.length} answered otherwise`,
    badReplays
  )

  // 7. The free budget
  const free = await db.query<{ ip: string; day: number; used: number; charged: number }>(
    `SELECT f.ip, f.day, f.credits_used AS used, COALESCE(c.charged, 0) AS charged FROM free_tier_usage f
     LEFT JOIN (SELECT ip, day, SUM(charged_free) AS charged FROM calls WHERE state = 'settled' GROUP BY ip, day) c
       ON c.ip = f.ip AND c.day = f.day`
  )
  const over = free.filter(
    (row) => Number(row.used) > defaultPolicy.freeCreditsPerIpDay || Number(row.used) < 0
  )
  const drift = free.filter((row) => Number(row.used) !== Number(row.charged))
  const orphanFree = await db.query<{ n: number }>(
    `SELECT count(*) AS n FROM calls c WHERE c.state = 'settled' AND c.charged_free > 0
       AND NOT EXISTS (SELECT 1 FROM free_tier_usage f WHERE f.ip = c.ip AND f.day = c.day)`
  )
  add(
    `free budget per IP and day <= ${defaultPolicy.freeCreditsPerIpDay} and = the free credits charged`,
    over.length + drift.length + Number(orphanFree[0]?.n ?? 0),
    `${plural(free.length, "(ip, day) row")}, most used ${Math.max(0, ...free.map((row) => Number(row.used)))}, ${over.length} over, ${drift.length} differ from the charges`,
    [...over, ...drift].map((row) => `${row.ip} day ${row.day}: used ${row.used}, charged ${row.charged}`)
  )

  // 8. Automatic top-up (armed on a quarter of the paid accounts, a line no balance is above)
  const topups = await db.query<{
    id: string
    account_id: string
    month: string
    state: string
    price: number
    max: number
    spent_before: number
    payment_ref: string | null
  }>(
    `SELECT t.id, t.account_id, t.month, t.state, t.price_usd_cents AS price, t.monthly_max_usd_cents AS max,
       (SELECT COALESCE(SUM(u.price_usd_cents), 0) FROM topups u
        WHERE u.account_id = t.account_id AND u.month = t.month AND u.state <> 'failed'
          AND (u.created_at, u.id) <= (t.created_at, t.id)) AS spent_before,
       t.payment_ref
     FROM topups t ORDER BY t.created_at, t.id`
  )
  const pastMax = topups.filter((row) => row.state !== "failed" && Number(row.spent_before) > Number(row.max))
  add(
    "no top-up past the monthly maximum (the month's open and paid top-ups, each counted when armed)",
    pastMax.length,
    `${plural(topups.length, "top-up")} (${topups.filter((row) => row.state === "succeeded").length} paid, ${topups.filter((row) => row.state === "failed").length} failed, ${topups.filter((row) => row.state === "pending" || row.state === "charging").length} open) on ${new Set(topups.map((row) => row.account_id)).size} accounts, ${pastMax.length} past the maximum`,
    pastMax.map(
      (row) =>
        `${row.id} of ${row.account_id} in ${row.month}: ${row.spent_before} cents with it, maximum ${row.max}`
    )
  )
  const credited = await db.query<{ payment_ref: string; n: number; account_id: string }>(
    `SELECT p.payment_ref, count(*) AS n, min(p.account_id) AS account_id FROM purchases p
     WHERE p.payment_ref LIKE 'topup:%' OR p.payment_ref IN (SELECT t.payment_ref FROM topups t WHERE t.payment_ref IS NOT NULL)
     GROUP BY p.payment_ref`
  )
  const creditsOf = new Map(credited.map((row) => [row.payment_ref, Number(row.n)]))
  const twice = topups.filter(
    (row) => row.state === "succeeded" && (row.payment_ref === null || creditsOf.get(row.payment_ref) !== 1)
  )
  const unpaidButCredited = topups.filter(
    (row) =>
      row.state !== "succeeded" && row.payment_ref !== null && (creditsOf.get(row.payment_ref) ?? 0) > 0
  )
  const strays = credited.filter(
    (row) => !topups.some((topup) => topup.payment_ref === row.payment_ref && topup.state === "succeeded")
  )
  const twoOpen = await db.query<{ account_id: string; n: number }>(
    `SELECT account_id, count(*) AS n FROM topups WHERE state IN ('pending', 'charging') GROUP BY account_id HAVING count(*) > 1`
  )
  add(
    "no top-up applied twice (each paid top-up credited by exactly one purchase, none other; one open at a time)",
    twice.length + unpaidButCredited.length + strays.length + twoOpen.length,
    `${plural(credited.length, "top-up purchase")}, ${twice.length} paid top-ups not credited exactly once, ${unpaidButCredited.length + strays.length} credits of an unpaid top-up, ${twoOpen.length} accounts with two open`,
    [
      ...twice.map((row) => `${row.id}: credited ${creditsOf.get(row.payment_ref ?? "") ?? 0} times`),
      ...unpaidButCredited.map((row) => `${row.id} is ${row.state} but credited`),
      ...strays.map((row) => `${row.payment_ref} of ${row.account_id}: no paid top-up`),
      ...twoOpen.map((row) => `${row.account_id}: ${row.n} open top-ups`)
    ]
  )

  // 9. Key caps: what a capped key and its child keys spent in each period of its cap, never above it
  const capped = await db.query<{
    key_id: string
    cap: number
    period: string
    spent: number
    counted: number | null
  }>(
    `SELECT s.key_id, s.cap, s.period, s.spent, ks.spent AS counted FROM (
       SELECT k.id AS key_id, k.spend_cap_credits AS cap, svc_period(k.cap_period, c.day) AS period,
              SUM(c.charged) AS spent
       FROM api_keys k
       JOIN api_keys spender ON spender.id = k.id OR spender.parent_key_id = k.id
       JOIN calls c ON c.key_id = spender.id AND c.state = 'settled'
       WHERE k.spend_cap_credits IS NOT NULL
       GROUP BY k.id, k.spend_cap_credits, svc_period(k.cap_period, c.day)) s
     LEFT JOIN key_spend ks ON ks.key_id = s.key_id AND ks.period = s.period
     ORDER BY s.key_id, s.period`
  )
  const overCap = capped.filter((row) => Number(row.spent) > Number(row.cap))
  // The counter the charging statements read must be what the ledger says it counts.
  const miscounted = capped.filter((row) => row.counted !== null && Number(row.counted) !== Number(row.spent))
  const cappedKeys = await db.query<{ n: number; children: number }>(
    `SELECT count(*) FILTER (WHERE spend_cap_credits IS NOT NULL) AS n,
            count(*) FILTER (WHERE parent_key_id IS NOT NULL) AS children FROM api_keys`
  )
  add(
    "no key over its cap (a capped key's and its child keys' settled charges per period <= the cap, = its counter)",
    overCap.length + miscounted.length,
    `${plural(Number(cappedKeys[0]?.n ?? 0), "capped key")} (${plural(Number(cappedKeys[0]?.children ?? 0), "child key")}), ${plural(capped.length, "key and period")} with charges, most used ${Math.max(0, ...capped.map((row) => Math.round((100 * Number(row.spent)) / Number(row.cap))))}% of a cap, ${overCap.length} over, ${miscounted.length} counters that differ`,
    [
      ...overCap.map((row) => `${row.key_id} ${row.period}: spent ${row.spent} of a cap of ${row.cap}`),
      ...miscounted.map((row) => `${row.key_id} ${row.period}: counter ${row.counted}, charges ${row.spent}`)
    ]
  )

  // Liveness: once the chaos is over and the leases have lapsed, every call gets a final answer.
  const open = calls.filter((call) => call.final === undefined)
  add(
    "every call had a final answer once the chaos was over (liveness, not a ledger rule)",
    open.length,
    `${open.length} of ${plural(calls.length, "call")} still without one after the reconcile`,
    open.map(history)
  )

  const ledger = await ledgerInvariants(db, defaultPolicy.freeCreditsPerIpDay)
  return [...checks, ...ledger.map((check): StormCheck => ({ ...check, group: "ledger", examples: [] }))]
}
