import { pool } from "./accounts.ts"
import type { PgSession } from "./pg.ts"
import { call } from "./service.ts"

export interface Check {
  readonly name: string
  readonly pass: boolean
  readonly detail: string
}

const check = (name: string, bad: number, detail: string): Check => ({ name, pass: bad === 0, detail })

const count = async (db: PgSession, text: string): Promise<number> => {
  const rows = await db.query<{ n: number | string }>(text)
  return Number(rows[0]?.n ?? 0)
}

/** The ledger's invariants, read straight from the bench's PostgreSQL database. */
export const ledgerInvariants = async (db: PgSession, freePerIpDay: number): Promise<Array<Check>> => {
  const negative = await count(
    db,
    "SELECT count(*) AS n FROM accounts WHERE grant_credits < 0 OR balance_credits < 0"
  )
  const overFree = await count(
    db,
    `SELECT count(*) AS n FROM free_tier_usage WHERE credits_used > ${freePerIpDay} OR credits_used < 0`
  )
  const freeDrift = await count(
    db,
    `SELECT count(*) AS n FROM free_tier_usage f
     LEFT JOIN (SELECT ip, day, SUM(charged_free) AS used FROM calls WHERE state = 'settled' GROUP BY ip, day) c
       ON c.ip = f.ip AND c.day = f.day
     WHERE f.credits_used <> COALESCE(c.used, 0)`
  )
  const badReceipts = await count(
    db,
    `SELECT count(*) AS n FROM calls WHERE state = 'settled' AND (
       settled_at IS NULL OR charged > quoted OR charged < 0
       OR charged <> charged_free + charged_grant + charged_balance
       OR charged_free > reserved_free OR charged_grant > reserved_grant OR charged_balance > reserved_balance)`
  )
  const orphanResults = await count(
    db,
    `SELECT count(*) AS n FROM idempotency_keys i LEFT JOIN calls c ON c.id = i.call_id
     WHERE i.state = 'done' AND (c.id IS NULL OR c.state <> 'settled')`
  )
  const unrecorded = await count(
    db,
    `SELECT count(*) AS n FROM calls c LEFT JOIN idempotency_keys i
       ON i.account_id = c.account_id AND i.idem_key = c.idempotency_key
     WHERE c.state = 'settled' AND c.idempotency_key IS NOT NULL AND (i.call_id IS DISTINCT FROM c.id)`
  )
  const unbalanced = await db.query<{
    id: string
    credited: number
    left: number
    charged: number
    reserved: number
  }>(
    `SELECT a.id, COALESCE(e.credited, 0) AS credited, a.grant_credits + a.balance_credits AS left,
            COALESCE(c.charged, 0) AS charged, COALESCE(r.reserved, 0) AS reserved
     FROM accounts a
     LEFT JOIN (SELECT account_id, SUM(credits) AS credited FROM credit_events GROUP BY account_id) e
       ON e.account_id = a.id
     LEFT JOIN (SELECT account_id, SUM(charged_grant + charged_balance) AS charged FROM calls
                WHERE state = 'settled' GROUP BY account_id) c ON c.account_id = a.id
     LEFT JOIN (SELECT account_id, SUM(reserved_grant + reserved_balance) AS reserved FROM calls
                WHERE state = 'reserved' GROUP BY account_id) r ON r.account_id = a.id
     WHERE COALESCE(e.credited, 0) - (a.grant_credits + a.balance_credits) <> COALESCE(c.charged, 0)`
  )
  const usageDrift = await count(
    db,
    `SELECT count(*) AS n FROM usage_days u
     FULL JOIN (SELECT account_id, day, SUM(charged) AS credits, COUNT(*) AS calls FROM calls
                WHERE state = 'settled' GROUP BY account_id, day) c
       ON c.account_id = u.account_id AND c.day = u.day
     WHERE u.credits IS DISTINCT FROM c.credits OR u.calls IS DISTINCT FROM c.calls`
  )
  const reserved = await count(db, "SELECT count(*) AS n FROM calls WHERE state = 'reserved'")
  const running = await count(db, "SELECT count(*) AS n FROM idempotency_keys WHERE state = 'running'")
  const settled = await count(db, "SELECT count(*) AS n FROM calls WHERE state = 'settled'")
  return [
    check("no negative balances", negative, `${negative} accounts below zero`),
    check(
      `free_tier_usage <= ${freePerIpDay} per ip and day`,
      overFree,
      `${overFree} (ip, day) rows over the budget`
    ),
    check("free_tier_usage == free credits charged per ip and day", freeDrift, `${freeDrift} rows differ`),
    check(
      "every settled call is a whole receipt",
      badReceipts,
      `${badReceipts} of ${settled} settled calls inconsistent`
    ),
    check(
      "every stored idempotent result points at a settled call",
      orphanResults,
      `${orphanResults} orphan results`
    ),
    check(
      "every settled call with an Idempotency-Key has its stored result",
      unrecorded,
      `${unrecorded} settled calls without their result`
    ),
    check(
      "credits - (grant + balance) == charges, per account",
      unbalanced.length,
      unbalanced.length === 0
        ? "every account balances"
        : unbalanced
            .slice(0, 3)
            .map(
              (row) =>
                `${row.id}: credited ${row.credited}, left ${row.left}, charged ${row.charged}, still reserved ${row.reserved}`
            )
            .join("; ")
    ),
    check(
      "usage_days == settled calls per account and day",
      usageDrift,
      `${usageDrift} (account, day) rows differ`
    ),
    check(
      "no call left 'reserved'",
      reserved,
      `${reserved} reserved (each holds its account's in-flight slot until its lease lapses)`
    ),
    check("no idempotency key left 'running'", running, `${running} running`)
  ]
}

interface ReceiptPage {
  readonly receipts: ReadonlyArray<{
    readonly id: string
    readonly charged: number
    readonly created_at: string
  }>
  readonly cursor: string | null
}

/**
 * Through HTTP only (PGlite's database lives inside the service): each account's receipts of today
 * add up to its usage, and every receipt a client was handed is listed with the same charge.
 */
export const httpInvariants = async (
  baseUrl: string,
  keys: ReadonlyArray<string>,
  seen: ReadonlyMap<string, { readonly charged: number }>
): Promise<Array<Check>> => {
  const today = new Date().toISOString().slice(0, 10)
  const listed = new Map<string, number>()
  const mismatched: Array<string> = []
  await pool(keys, 8, async (key) => {
    let credits = 0
    let calls = 0
    let cursor: string | null = null
    for (let page = 0; page < 1000; page++) {
      const path: string = `/v1/receipts?limit=100${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
      const reply = await call(baseUrl, path, { key })
      if (reply.status !== 200) throw new Error(`GET ${path}: ${reply.status}`)
      const body = reply.body as ReceiptPage
      for (const receipt of body.receipts) {
        listed.set(receipt.id, receipt.charged)
        if (receipt.created_at.startsWith(today)) {
          credits += receipt.charged
          calls += 1
        }
      }
      cursor = body.cursor
      if (cursor === null) break
    }
    const usage = await call(baseUrl, "/v1/usage", { key })
    const facts = usage.body?.today ?? usage.body?.usage?.today
    if (facts === undefined || facts.credits !== credits || facts.calls !== calls) {
      mismatched.push(`${key.slice(0, 14)}...: receipts ${credits}/${calls}, usage ${JSON.stringify(facts)}`)
    }
  })
  const missing = [...seen.entries()].filter(([id, { charged }]) => listed.get(id) !== charged)
  return [
    {
      name: "receipts of today add up to usage today (credits and calls), per account",
      pass: mismatched.length === 0,
      detail: mismatched.length === 0 ? `${keys.length} accounts agree` : mismatched.slice(0, 3).join("; ")
    },
    {
      name: "every receipt handed to a client is listed, with the same charge",
      pass: missing.length === 0,
      detail:
        missing.length === 0
          ? `${seen.size} receipts found`
          : `${missing.length} of ${seen.size} missing or different, e.g. ${missing[0]![0]}`
    }
  ]
}

/** Idempotency keys still claimed as running: which, and how long their lease still holds them. */
export const runningKeys = (db: PgSession, now: number) =>
  db.query<{ idem_key: string; lease_left_ms: number }>(
    `SELECT idem_key, lease_expires_at - ${Math.round(now)} AS lease_left_ms FROM idempotency_keys WHERE state = 'running'`
  )

/** Calls still holding their reservation (and their account's in-flight slot). */
export const reservedCalls = (db: PgSession, now: number) =>
  db.query<{ id: string; idempotency_key: string | null; lease_left_ms: number }>(
    `SELECT id, idempotency_key, lease_expires_at - ${Math.round(now)} AS lease_left_ms FROM calls WHERE state = 'reserved'`
  )
