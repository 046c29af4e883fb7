import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { defaultPolicy } from "../../src/domain/policy.ts"

/** What the clients were answered, which the ledger must agree with. */
export interface Answer {
  readonly account: string
  readonly idem: string
  readonly receipt: string
  readonly charged: number
  readonly free: number
  readonly spent: number
  readonly replayed: boolean
}

/** What the simulator saw come into accounts: the reference model's inputs besides the answers. */
export interface Model {
  readonly answers: Array<Answer>
  /** Credits each account was told it got (claim grants, paid checkouts), by account. */
  readonly credited: Map<string, number>
  /** Checkout sessions the simulator paid, by session id, with the account they pay. */
  readonly paid: Map<string, string>
}

export interface Violation {
  readonly invariant: string
  readonly detail: string
}

const n = (value: unknown) => Number(value ?? 0)

/** Rows of `text`; each check is one statement over the shared store. */
const rows = <A extends object = Record<string, unknown>>(
  text: string,
  params: ReadonlyArray<unknown> = []
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.unsafe<A>(text, params)
  })

const firstRows = (list: ReadonlyArray<object>) =>
  list
    .slice(0, 3)
    .map((row) => JSON.stringify(row))
    .join("; ")

/**
 * The invariants that hold at every moment, even with calls in flight: checked after every step
 * and while the simulator holds calls in the upstream.
 */
export const alwaysChecks = (now: number) =>
  Effect.gen(function* () {
    const found: Array<Violation> = []
    const fail = (invariant: string, bad: ReadonlyArray<object>) => {
      if (bad.length > 0) found.push({ invariant, detail: firstRows(bad) })
    }
    fail(
      "no balance or grant below zero",
      yield* rows(
        "SELECT id, grant_credits, balance_credits FROM accounts WHERE grant_credits < 0 OR balance_credits < 0"
      )
    )
    fail(
      `the free budget of an IP and day never over ${defaultPolicy.freeCreditsPerIpDay}`,
      yield* rows(
        "SELECT ip, day, credits_used FROM free_tier_usage WHERE credits_used > $1 OR credits_used < 0",
        [defaultPolicy.freeCreditsPerIpDay]
      )
    )
    fail(
      "one call in flight per account",
      yield* rows(
        "SELECT account_id, count(*) AS n FROM calls WHERE state = 'reserved' GROUP BY account_id HAVING count(*) > 1"
      )
    )
    fail(
      "at most one charge per Idempotency-Key",
      yield* rows(
        `SELECT account_id, idempotency_key, count(*) AS n FROM calls WHERE state = 'settled' AND idempotency_key IS NOT NULL
         GROUP BY account_id, idempotency_key HAVING count(*) > 1`
      )
    )
    fail(
      "no key over its spend cap",
      yield* rows(
        `SELECT k.id, k.spend_cap_credits, s.spent FROM api_keys k
         JOIN (SELECT key_id, SUM(charged) AS spent FROM calls WHERE state = 'settled' GROUP BY key_id) s ON s.key_id = k.id
         WHERE k.spend_cap_credits IS NOT NULL AND k.cap_period = 'total' AND k.parent_key_id IS NULL
           AND s.spent > k.spend_cap_credits
           AND NOT EXISTS (SELECT 1 FROM api_keys c WHERE c.parent_key_id = k.id)`
      )
    )
    fail(
      "no reservation stranded past its lease once time moves on",
      yield* rows(
        "SELECT id, account_id, lease_expires_at FROM calls WHERE state = 'reserved' AND lease_expires_at < $1",
        [now - 15_000]
      )
    )
    fail(
      "no claim stranded past its lease once time moves on",
      yield* rows(
        "SELECT account_id, idem_key, lease_expires_at FROM idempotency_keys WHERE state = 'running' AND lease_expires_at < $1",
        [now - 75_000]
      )
    )
    fail(
      "never two top-ups open at once for an account",
      yield* rows(
        "SELECT account_id, count(*) AS n FROM topups WHERE state IN ('pending', 'charging') GROUP BY account_id HAVING count(*) > 1"
      )
    )
    fail(
      "no top-up past its monthly maximum",
      yield* rows(
        `SELECT account_id, month, SUM(price_usd_cents) AS spent, MAX(monthly_max_usd_cents) AS max FROM topups
         WHERE state <> 'failed' GROUP BY account_id, month HAVING SUM(price_usd_cents) > MAX(monthly_max_usd_cents)`
      )
    )
    fail(
      "every purchase applied once (one purchase per payment)",
      yield* rows("SELECT payment_ref, count(*) AS n FROM purchases GROUP BY payment_ref HAVING count(*) > 1")
    )
    return found
  }).pipe(Effect.orDie)

/**
 * The invariants of a quiet ledger (no call in flight), against what the clients were answered and
 * the reference model: checked after every step that let its calls finish.
 */
export const ledgerChecks = (model: Model) =>
  Effect.gen(function* () {
    const found: Array<Violation> = []
    const fail = (invariant: string, bad: ReadonlyArray<unknown>) => {
      if (bad.length > 0)
        found.push({
          invariant,
          detail: bad
            .slice(0, 3)
            .map((row) => (typeof row === "string" ? row : JSON.stringify(row)))
            .join("; ")
        })
    }
    fail(
      "every settled call is a whole receipt (charged = its sources, never above the quote or the reservation)",
      yield* rows(
        `SELECT id, quoted, charged, charged_free, charged_grant, charged_balance FROM calls WHERE state = 'settled' AND (
           settled_at IS NULL OR charged > quoted OR charged < 0
           OR charged <> charged_free + charged_grant + charged_balance
           OR charged_free > reserved_free OR charged_grant > reserved_grant OR charged_balance > reserved_balance)`
      )
    )
    fail(
      "credits in - (grant + balance) = charges, per account",
      yield* rows(
        `SELECT a.id, COALESCE(e.credited, 0) AS credited, a.grant_credits + a.balance_credits AS left_over,
                COALESCE(c.charged, 0) AS charged, COALESCE(r.reserved, 0) AS reserved
         FROM accounts a
         LEFT JOIN (SELECT account_id, SUM(credits) AS credited FROM credit_events GROUP BY account_id) e ON e.account_id = a.id
         LEFT JOIN (SELECT account_id, SUM(charged_grant + charged_balance) AS charged FROM calls
                    WHERE state = 'settled' GROUP BY account_id) c ON c.account_id = a.id
         LEFT JOIN (SELECT account_id, SUM(reserved_grant + reserved_balance) AS reserved FROM calls
                    WHERE state = 'reserved' GROUP BY account_id) r ON r.account_id = a.id
         WHERE COALESCE(e.credited, 0) - (a.grant_credits + a.balance_credits) <> COALESCE(c.charged, 0) + COALESCE(r.reserved, 0)`
      )
    )
    fail(
      "free budget used = the free credits charged, per IP and day",
      yield* rows(
        `SELECT f.ip, f.day, f.credits_used, COALESCE(c.used, 0) AS charged FROM free_tier_usage f
         LEFT JOIN (SELECT ip, day, SUM(charged_free) AS used FROM calls WHERE state = 'settled' GROUP BY ip, day) c
           ON c.ip = f.ip AND c.day = f.day
         LEFT JOIN (SELECT ip, day, SUM(reserved_free) AS held FROM calls WHERE state = 'reserved' GROUP BY ip, day) r
           ON r.ip = f.ip AND r.day = f.day
         WHERE f.credits_used <> COALESCE(c.used, 0) + COALESCE(r.held, 0)`
      )
    )
    fail(
      "every stored result points at its settled call, and every settled call with a key has its stored result",
      yield* rows(
        `SELECT c.id, c.idempotency_key, i.state, i.call_id FROM calls c LEFT JOIN idempotency_keys i
           ON i.account_id = c.account_id AND i.idem_key = c.idempotency_key
         WHERE c.state = 'settled' AND c.idempotency_key IS NOT NULL AND i.call_id IS DISTINCT FROM c.id
         UNION ALL
         SELECT i.call_id, i.idem_key, i.state, c.state FROM idempotency_keys i LEFT JOIN calls c ON c.id = i.call_id
         WHERE i.state = 'done' AND (c.id IS NULL OR c.state <> 'settled')`
      )
    )
    fail(
      "each paid top-up credited by exactly one purchase, and no unpaid one credited",
      yield* rows(
        `SELECT t.id, t.state, t.payment_ref, (SELECT count(*) FROM purchases p WHERE p.payment_ref = t.payment_ref) AS n
         FROM topups t
         WHERE (t.state = 'succeeded' AND (t.payment_ref IS NULL OR (SELECT count(*) FROM purchases p WHERE p.payment_ref = t.payment_ref) <> 1))
            OR (t.state <> 'succeeded' AND t.payment_ref IS NOT NULL AND EXISTS (SELECT 1 FROM purchases p WHERE p.payment_ref = t.payment_ref))`
      )
    )

    // Against what the clients were answered.
    const settled = yield* rows<{
      id: string
      account_id: string
      idempotency_key: string | null
      charged: unknown
      charged_free: unknown
    }>("SELECT id, account_id, idempotency_key, charged, charged_free FROM calls WHERE state = 'settled'")
    const byId = new Map(settled.map((row) => [row.id, row]))
    const seen = new Set<string>()
    const wrong: Array<string> = []
    const firstOfKey = new Map<string, string>()
    for (const answer of model.answers) {
      seen.add(answer.receipt)
      const row = byId.get(answer.receipt)
      const key = `${answer.account} ${answer.idem}`
      if (row === undefined) {
        wrong.push(`a 200 answered receipt ${answer.receipt}, which is not a settled call`)
        continue
      }
      if (row.account_id !== answer.account || row.idempotency_key !== answer.idem)
        wrong.push(`receipt ${row.id} is of ${row.account_id} ${row.idempotency_key}, answered to ${key}`)
      if (n(row.charged) !== answer.charged)
        wrong.push(`receipt ${row.id} charged ${row.charged}, the answer said ${answer.charged}`)
      const first = firstOfKey.get(key)
      if (first === undefined) firstOfKey.set(key, answer.receipt)
      else if (first !== answer.receipt)
        wrong.push(`${key} answered with ${first} and then ${answer.receipt}`)
    }
    fail("every 200 has its receipt, as charged, and one receipt per Idempotency-Key", wrong)
    fail(
      "no charge without a 200 (every charged receipt was answered to a client)",
      settled
        .filter((row) => n(row.charged) > 0 && !seen.has(row.id))
        .map((row) => `${row.id} charged ${row.charged}`)
    )

    // The reference model: what each account has left and each IP's free budget used, computed
    // from the accepted operations (fresh 200s, grants and payments the clients were told of, and
    // the top-ups the store says it paid).
    const spent = new Map<string, number>()
    const free = new Map<string, number>()
    // Each receipt counted once, when first answered (a replay may be the first a client hears of it).
    const counted = new Set<string>()
    const once = model.answers.filter(
      (answer) => !counted.has(answer.receipt) && counted.add(answer.receipt) !== undefined
    )
    for (const answer of once) spent.set(answer.account, (spent.get(answer.account) ?? 0) + answer.spent)
    const ipOf = yield* rows<{ id: string; ip: string; charged_free: unknown }>(
      "SELECT id, ip, charged_free FROM calls WHERE state = 'settled' AND charged_free > 0"
    )
    const ipById = new Map(ipOf.map((row) => [row.id, row.ip]))
    for (const answer of once) {
      if (answer.free === 0) continue
      const ip = ipById.get(answer.receipt) ?? "?"
      free.set(ip, (free.get(ip) ?? 0) + answer.free)
    }
    const topups = yield* rows<{ account_id: string; credits: unknown }>(
      "SELECT account_id, SUM(credits) AS credits FROM topups WHERE state = 'succeeded' GROUP BY account_id"
    )
    const toppedUp = new Map(topups.map((row) => [row.account_id, n(row.credits)]))
    const accounts = yield* rows<{ id: string; left_over: unknown }>(
      "SELECT id, grant_credits + balance_credits AS left_over FROM accounts"
    )
    const drift: Array<string> = []
    for (const account of accounts) {
      const expected =
        (model.credited.get(account.id) ?? 0) + (toppedUp.get(account.id) ?? 0) - (spent.get(account.id) ?? 0)
      if (expected !== n(account.left_over))
        drift.push(`${account.id} has ${account.left_over}, the model says ${expected}`)
    }
    const used = yield* rows<{ ip: string; used: unknown }>(
      "SELECT ip, SUM(credits_used) AS used FROM free_tier_usage GROUP BY ip"
    )
    for (const row of used) {
      if ((free.get(row.ip) ?? 0) !== n(row.used))
        drift.push(`free budget of ${row.ip}: used ${row.used}, the model says ${free.get(row.ip) ?? 0}`)
    }
    fail("the balances equal the reference model's", drift)

    const purchases = yield* rows<{ account_id: string; n: unknown }>(
      "SELECT account_id, count(*) AS n FROM purchases WHERE payment_ref LIKE 'local:%' GROUP BY account_id"
    )
    const bought = new Map(purchases.map((row) => [row.account_id, n(row.n)]))
    const sessionsOf = new Map<string, number>()
    for (const account of model.paid.values()) sessionsOf.set(account, (sessionsOf.get(account) ?? 0) + 1)
    const paidOnce: Array<string> = []
    for (const account of new Set([...bought.keys(), ...sessionsOf.keys()])) {
      if ((bought.get(account) ?? 0) !== (sessionsOf.get(account) ?? 0))
        paidOnce.push(
          `${account}: ${sessionsOf.get(account) ?? 0} checkouts paid, ${bought.get(account) ?? 0} purchases applied`
        )
    }
    fail("every paid checkout applied exactly once, to its account", paidOnce)
    return found
  }).pipe(Effect.orDie)
