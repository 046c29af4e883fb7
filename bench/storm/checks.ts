import { type Check, checkLedgerOn, finished, showRow } from "../invariants.ts"
import type { PgSession } from "../pg.ts"
import { type Attempt, describe, type LogicalCall } from "./clients.ts"

export interface StormCheck extends Check {
  /** Where it comes from: the storm's own list (what the clients saw), or bench/invariants.ts (the ledger's, shared with the simulation and the soak). */
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
  calls: ReadonlyArray<LogicalCall>,
  now = Date.now()
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

  // The receipts of each key (one at most: the shared "at most one charge per Idempotency-Key")
  const receiptsOfKey = new Map<string, Array<CallRow>>()
  for (const row of settled) {
    if (row.idempotency_key === null) continue
    const key = `${row.account_id} ${row.idempotency_key}`
    receiptsOfKey.set(key, [...(receiptsOfKey.get(key) ?? []), row])
  }
  // 1. Every 200 has its one receipt, with the charge the client saw
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

  // 2. No charge without a 200
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

  // 3. Replays
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

  // Liveness: once the chaos is over and the leases have lapsed, every call gets a final answer.
  const open = calls.filter((call) => call.final === undefined)
  add(
    "every call had a final answer once the chaos was over (liveness, not a ledger rule)",
    open.length,
    `${open.length} of ${plural(calls.length, "call")} still without one after the reconcile`,
    open.map(history)
  )

  // The ledger's invariants (bench/invariants.ts), each offending row in words; a call or claim
  // left in flight with what the clients saw of its key.
  const broken = new Map(
    (await checkLedgerOn(db, finished, [now])).map((violation) => [violation.invariant, violation])
  )
  const inWords = (row: unknown): string => {
    const { account_id, idempotency_key, idem_key } = row as Record<string, unknown>
    const key = idempotency_key ?? idem_key
    return key === undefined ? showRow(row) : `${showRow(row)}: ${history(byKey.get(`${account_id} ${key}`))}`
  }
  const ledger = finished.map(({ name }): StormCheck => {
    const violation = broken.get(name)
    return {
      group: "ledger",
      name,
      pass: violation === undefined,
      detail:
        violation === undefined
          ? "holds"
          : `${plural(violation.rows.length, "offending row")}${violation.rows.length === 20 ? " or more" : ""}`,
      examples: violation === undefined ? [] : violation.rows.slice(0, 5).map(inWords)
    }
  })
  return [...ledger, ...checks]
}
