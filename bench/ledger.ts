import { PGlite } from "@electric-sql/pglite"
import { Effect } from "effect"
import { defaultPolicy } from "../src/domain/policy.ts"
import { msPerDay } from "../src/domain/time.ts"
import { idForm } from "../src/services/Ids.ts"
import { lockDataDir } from "../src/store/DataDirLock.ts"
import { pgSession } from "./pg.ts"

/** Rows per INSERT: big enough that statements cost little, small enough that none holds much memory. */
const chunk = 100_000

/** The receipts span the last 30 UTC days, today included: what `GET /v1/usage` sums. */
const days = 30

/** How long the service replays a stored result (a day), and how long its tombstone lasts after. */
const { replayWindowMs, tombstoneMs } = defaultPolicy

export interface Preload {
  readonly rows: number
  /** Seconds of the INSERTs, and of VACUUM ANALYZE and a CHECKPOINT after them. */
  readonly insertSeconds: number
  readonly vacuumSeconds: number
}

/** One real receipt per bench account with its stored result, numbered from 0. */
const templates = `SELECT (row_number() OVER (ORDER BY c.account_id) - 1)::bigint AS n, c.*, k.response
  FROM (SELECT DISTINCT ON (c.account_id) c.* FROM calls c JOIN accounts a ON a.id = c.account_id
        WHERE a.plan = 'production' AND c.state = 'settled' AND c.idempotency_key IS NOT NULL
          AND c.idempotency_key NOT LIKE 'preload-%'
        ORDER BY c.account_id, c.created_at DESC, c.id) c
  JOIN idempotency_keys k ON k.account_id = c.account_id AND k.idem_key = c.idempotency_key
    AND k.state = 'done' AND k.response IS NOT NULL`

export const countTemplates = `SELECT count(*) AS n FROM (${templates}) t`

/**
 * The statements that add `rows` settled receipts, copied from a real one of each bench account
 * (the paid accounts, each with the call of its replay set-up): its key, IP, operation, quote,
 * charge and funding split, and its stored idempotent result with the ids swapped for the new
 * call's. `accounts` is how many there are (`countTemplates`), a constant in the statements so
 * that the join to the series is a hash join. Spread round-robin over the accounts and evenly over
 * the last 30 days (`day` is the UTC day number of `created_at`, as `dayOf` makes it); ids are
 * made as real ones are (their time in hex, then random-looking characters), so the indexes grow
 * as they would. Each receipt has its `idempotency_keys` row ('done', owner and
 * call_id the receipt), so the idempotency table grows with the ledger.
 *
 * Ledger invariants (the soak's, bench/invariants.ts): the receipts charge what the real call
 * charged, and the accounts' balances are not debited; instead each account gets one credit event
 * of what its preloaded receipts charged, as if bought and spent. So credits added minus what is
 * left still equals what was charged, no balance moves, every receipt is whole and has its stored
 * result. The keys' replay ends a day after their call, as the service sets it, but their tombstones
 * end 7 days from now, not 8 days after their call: the housekeeping would otherwise delete three
 * quarters of them in the middle of the measurement (a real ledger of this size keeps only its last
 * 8 days of keys).
 */
export const preloadStatements = (
  rows: number,
  accounts: number,
  now: number,
  seed: string
): ReadonlyArray<string> => {
  const start = (Math.floor(now / msPerDay) - (days - 1)) * msPerDay
  const span = now - start
  const series = (lo: number, hi: number) => `WITH t AS (${templates}),
    g AS (SELECT g, at, 'rcpt_' || lpad(to_hex(at), ${idForm.timeDigits}, '0')
              || substr(md5('${seed}r' || g), 1, ${idForm.randomChars}) AS id,
            'preload-' || md5('${seed}k' || g) AS idem
          FROM (SELECT g, ${now - 1} - (g::bigint * ${span}) / ${rows} AS at
                FROM generate_series(${lo}, ${hi}) g) s)`
  const statements: Array<string> = []
  for (let lo = 0; lo < rows; lo += chunk) {
    const hi = Math.min(rows, lo + chunk) - 1
    statements.push(
      `${series(lo, hi)}
      INSERT INTO calls (id, account_id, key_id, operation, state, ip, day, quoted, reserved_free,
          reserved_grant, reserved_balance, charged, charged_free, charged_grant, charged_balance, refunds,
          idempotency_key, lease_expires_at, created_at, settled_at)
        SELECT g.id, t.account_id, t.key_id, t.operation, 'settled', t.ip, (g.at / ${msPerDay})::integer,
          t.quoted, t.reserved_free, t.reserved_grant, t.reserved_balance, t.charged, t.charged_free,
          t.charged_grant, t.charged_balance, t.refunds, g.idem, g.at, g.at, g.at
        FROM g JOIN t ON t.n = g.g % ${accounts}`,
      `${series(lo, hi)}
      INSERT INTO idempotency_keys (account_id, idem_key, fingerprint, state, owner, call_id, response,
          lease_expires_at, replay_until, tombstone_until, created_at)
        SELECT t.account_id, g.idem, md5('${seed}f' || g.g) || md5('${seed}F' || g.g), 'done', g.id, g.id,
          replace(replace(t.response, t.id, g.id), t.idempotency_key, g.idem), g.at, g.at + ${replayWindowMs},
          ${now + tombstoneMs}, g.at
        FROM g JOIN t ON t.n = g.g % ${accounts}`
    )
  }
  statements.push(
    `INSERT INTO credit_events (id, account_id, kind, credits, reason, created_at)
      SELECT 'cred_' || substr(md5('${seed}c' || account_id), 1, 20), account_id, 'balance',
        SUM(charged_grant + charged_balance), 'bench: credits of the preloaded receipts', ${start}
      FROM calls WHERE idempotency_key LIKE 'preload-%' GROUP BY account_id`
  )
  return statements
}

/**
 * VACUUM as well as ANALYZE: a ledger this size in service is vacuumed, and PostgreSQL's autovacuum
 * would otherwise start on the new rows during the measurement. Then a CHECKPOINT: a ledger grows
 * over months with checkpoints between, not in one burst whose hundreds of MB of dirty pages the
 * checkpointer would be writing out during the measurement (on PostgreSQL, the service's rate fell
 * to 0.81x of the empty ledger's with the service's own CPU per hit up a third, on a server that
 * shares its cores). A role that may not checkpoint (neither superuser nor `pg_checkpoint`) skips it.
 */
const vacuum = "VACUUM (ANALYZE) calls, idempotency_keys, credit_events"

interface Target {
  /** Runs one statement. */
  readonly exec: (text: string) => Promise<unknown>
  /** The `n` of the one row of a `SELECT count(*) AS n`. */
  readonly count: (text: string) => Promise<number>
}

const timed = async (target: Target, rows: number, seed: string): Promise<Preload> => {
  const begun = performance.now()
  // Statistics first (PGlite has no autovacuum): the planner would otherwise take the template rows
  // for one and join them to the series by a nested loop (13 s per 100,000 rows on PGlite, not 2).
  await target.exec("ANALYZE accounts, calls, idempotency_keys")
  const accounts = await target.count(countTemplates)
  if (accounts === 0) throw new Error("no settled receipt of a bench account to copy")
  for (const statement of preloadStatements(rows, accounts, Date.now(), seed)) await target.exec(statement)
  const inserted = performance.now()
  await target.exec(vacuum)
  await target.exec("CHECKPOINT").catch(() => undefined)
  return {
    rows,
    insertSeconds: (inserted - begun) / 1000,
    vacuumSeconds: (performance.now() - inserted) / 1000
  }
}

/** Through a session of the bench's own, while the service runs on the same database. */
export const preloadPostgres = async (url: string, rows: number, seed: string): Promise<Preload> => {
  const db = pgSession(url)
  try {
    return await timed(
      {
        exec: (text) => db.query(text),
        count: async (text) => Number((await db.query<{ n: number }>(text))[0]?.n ?? 0)
      },
      rows,
      seed
    )
  } finally {
    await db.close()
  }
}

/**
 * In this process, on the data directory of a stopped PGlite service, holding the directory's lock
 * as the service does (one process per directory: two PGlites over the same files corrupt them).
 */
export const preloadPglite = (dataDir: string, rows: number, seed: string): Promise<Preload> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.andThen(
        lockDataDir(dataDir),
        Effect.tryPromise({
          try: async () => {
            const pglite = await PGlite.create(dataDir)
            try {
              return await timed(
                {
                  exec: (text) => pglite.exec(text),
                  count: async (text) => Number((await pglite.query<{ n: number }>(text)).rows[0]?.n ?? 0)
                },
                rows,
                seed
              )
            } finally {
              await pglite.close()
            }
          },
          catch: (error) => error
        })
      )
    )
  )
