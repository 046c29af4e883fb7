import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Bugs the simulator plants on purpose, to show its checks bite: each one is test-only, applied
 * to the simulation's store (a function of the money rule replaced by a broken copy) or to the
 * statements one instance sends (its connection's rewrite). Production code never sees them.
 */
export interface Mutation {
  readonly name: string
  readonly description: string
  /** Run once on the migrated store before the instances start. */
  readonly patch?: Effect.Effect<void, unknown, SqlClient.SqlClient>
  /** Applied to every statement the instances send. */
  readonly rewrite?: (sql: string) => string
  /**
   * How many requests of seed 1 the test (`sim.test.ts`) and CI run to catch it, when more than the
   * usual 330 (`mutationOps`): the path it breaks comes later in that seed's schedule.
   */
  readonly ops?: number
}

/** The requests of seed 1 that catch a mutation: its own `ops`, else 330. */
export const mutationOps = (mutation: Mutation): number => mutation.ops ?? 330

/** The live text of every function (applied by the migrator before a mutation's patch runs). */
const functions = readFileSync(new URL("../../migrations/functions.sql", import.meta.url), "utf8")

/** A function's definition from `source`, as `CREATE OR REPLACE`. */
const functionOf = (source: string, name: string): string => {
  const at = (text: string) => {
    const index = source.indexOf(`${text} ${name}(`)
    return index === -1 ? undefined : { index, length: text.length }
  }
  const found = at("CREATE FUNCTION") ?? at("CREATE OR REPLACE FUNCTION")
  if (found === undefined) throw new Error(`no function ${name}`)
  const body = source.indexOf("$$", found.index)
  const end = source.indexOf("$$;", body + 2)
  return `CREATE OR REPLACE FUNCTION${source.slice(found.index + found.length, end + 3)}`
}

/** Replaces `name` with its definition where `from` becomes `to` (which must occur). */
const replaceFunction = (source: string, name: string, edits: ReadonlyArray<readonly [string, string]>) =>
  Effect.gen(function* () {
    let text = functionOf(source, name)
    for (const [from, to] of edits) {
      if (!text.includes(from)) return yield* Effect.die(new Error(`${name} has no "${from}"`))
      text = text.split(from).join(to)
    }
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(text)
  })

const statements = (...texts: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    for (const text of texts) yield* sql.unsafe(text)
  })

export const mutations: ReadonlyArray<Mutation> = [
  {
    name: "skip-settle-fence",
    description: "settle a call whatever its state: a call that outlived its lease settles after its refund",
    patch: replaceFunction(functions, "svc_settle", [
      ["WHERE c.id = p_call AND c.state = 'reserved';", "WHERE c.id = p_call;"],
      ["WHERE c.id = p_call AND c.state = 'reserved' RETURNING", "WHERE c.id = p_call RETURNING"]
    ])
  },
  {
    name: "free-budget-race",
    description: "count the free budget as twice its size (what a read-then-write race lets through)",
    patch: replaceFunction(functions, "svc_free_left_of", [
      ["p_free_per_ip - p_used", "2 * p_free_per_ip - p_used"]
    ])
  },
  {
    name: "forget-one-in-flight",
    description: "let an account reserve a second call while one is in flight",
    patch: Effect.andThen(
      statements("DROP INDEX calls_one_in_flight"),
      replaceFunction(functions, "svc_in_flight", [["c.state = 'reserved' LIMIT 1", "false LIMIT 1"]])
    )
  },
  {
    name: "apply-purchase-twice",
    description:
      "credit a payment every time it is reported: no unique payment reference, and a paid checkout read as open",
    patch: statements("ALTER TABLE purchases DROP CONSTRAINT purchases_payment_ref_key"),
    rewrite: (sql) =>
      sql
        .replace("ON CONFLICT (payment_ref) DO NOTHING RETURNING id", "RETURNING id")
        .replace(
          /^SELECT id, account_id, pack, rail, status, (keyless, origin, key_revealed_at, expires_at FROM checkout_sessions\s+WHERE id = \$1 FOR UPDATE)/,
          "SELECT id, account_id, pack, rail, 'open'::text AS status, $1"
        )
  },
  {
    name: "take-twice",
    description: "take a reservation's grant and balance from the account twice",
    patch: replaceFunction(functions, "svc_take", [
      [
        "SET grant_credits = grant_credits - p_grant, balance_credits = balance_credits - p_balance",
        "SET grant_credits = GREATEST(grant_credits - 2 * p_grant, 0), balance_credits = GREATEST(balance_credits - 2 * p_balance, 0)"
      ]
    ])
  },
  {
    name: "cap-spend-wrong-period",
    description:
      "count a capped key's spend toward its total whatever its cap's period: a day or month cap never binds",
    patch: replaceFunction(functions, "svc_key_spend", [
      [
        "SELECT k.id, svc_period(k.cap_period, p_day), GREATEST(p_delta, 0)",
        "SELECT k.id, 'total', GREATEST(p_delta, 0)"
      ]
    ])
  },
  {
    name: "x402-credit-twice",
    description:
      "credit an x402 authorization each time the chain says it was used: no unique payment reference, no look for an earlier credit, the settlement left open",
    patch: statements("ALTER TABLE purchases DROP CONSTRAINT purchases_payment_ref_key"),
    rewrite: (sql) =>
      sql
        .replace("ON CONFLICT (payment_ref) DO NOTHING RETURNING id", "RETURNING id")
        .replace(
          /^SELECT id FROM purchases WHERE payment_ref = \$1$/,
          "SELECT id FROM purchases WHERE false AND payment_ref = $1"
        )
        .replace(/^DELETE FROM x402_settlements WHERE payment_ref = \$1$/, "SELECT 1 WHERE $1::text IS NULL")
  },
  {
    name: "x402-forget-settlement",
    description:
      "begin an x402 settlement afresh on every attempt: a retry after a lost settle answer never looks on the chain, so the payment is never credited",
    ops: 500,
    rewrite: (sql) =>
      sql.replace(
        "ON CONFLICT (payment_ref) DO NOTHING RETURNING payment_ref",
        "ON CONFLICT (payment_ref) DO UPDATE SET created_at = EXCLUDED.created_at RETURNING payment_ref"
      )
  },
  {
    name: "cap-never-rolls-over",
    description: "count a day or month cap's spend into one period for good: the cap never rolls over",
    patch: replaceFunction(functions, "svc_period", [
      ["WHEN 'day' THEN 'day:' || p_day", "WHEN 'day' THEN 'day'"],
      [
        "WHEN 'month' THEN 'month:' || to_char(date '1970-01-01' + p_day, 'YYYY-MM')",
        "WHEN 'month' THEN 'month'"
      ]
    ])
  },
  {
    name: "receipt-key-mismatch",
    description:
      "publish in the JWKS a public key other than the one that signs (receipts signed with a wrong key)",
    patch: statements(
      `CREATE FUNCTION sim_wrong_public_key() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         NEW.public_jwk := jsonb_set(NEW.public_jwk::jsonb, '{x}', '"c24EvmBWAW81xjVh3MnDQjg5O5bGobvuCAhvbKENdTg"')::text;
         RETURN NEW;
       END $$`,
      `CREATE TRIGGER sim_wrong_public_key BEFORE INSERT ON receipt_signing_keys
       FOR EACH ROW EXECUTE FUNCTION sim_wrong_public_key()`
    )
  },
  {
    name: "subscription-end-keeps-production",
    description: "end a subscription but leave its account on production",
    ops: 500,
    rewrite: (sql) =>
      sql.replace(
        "UPDATE accounts SET plan = 'flex' WHERE id = $1 AND plan = 'production'",
        "UPDATE accounts SET plan = plan WHERE id = $1 AND plan = 'production'"
      )
  },
  {
    name: "renew-after-cancel",
    description: "renew a subscription set to cancel at its period's end (the cancel is never read)",
    ops: 500,
    rewrite: (sql) =>
      sql.replace(
        "SELECT id, account_id, pack, rail, cancel_at_period_end, current_period_end, periods",
        "SELECT id, account_id, pack, rail, false AS cancel_at_period_end, current_period_end, periods"
      )
  },
  {
    name: "topup-past-max",
    description: "arm an automatic top-up whatever the month's maximum",
    patch: replaceFunction(functions, "svc_topup_arm", [
      ["IF v_spent + t.price_usd_cents > t.monthly_max_usd_cents THEN", "IF false THEN"]
    ])
  },
  {
    name: "oauth-token-any-account",
    description:
      "resolve an access token's connected app by its client alone, not the account that consented: one account's token spends another's credits",
    rewrite: (sql) =>
      sql.includes("FROM oauth_apps") && !sql.includes("FOR UPDATE")
        ? sql.replace(
            "WHERE account_id = $1 AND client_id = $2 AND revoked_at IS NULL",
            "WHERE $1::text IS NOT NULL AND client_id = $2 AND revoked_at IS NULL"
          )
        : sql
  },
  {
    name: "webhook-wrong-event",
    description:
      "read a delivery's event by its account, not its id: a delivery carries another event's body",
    rewrite: (sql) =>
      sql.replace(
        "JOIN webhook_events ev ON ev.id = d.event_id",
        "JOIN webhook_events ev ON ev.account_id = (SELECT account_id FROM webhook_endpoints WHERE id = d.endpoint_id)"
      )
  }
]

export const mutationNamed = (name: string): Mutation => {
  const found = mutations.find((mutation) => mutation.name === name)
  if (found === undefined) throw new Error(`no mutation ${name}; --list-mutations lists them`)
  return found
}
