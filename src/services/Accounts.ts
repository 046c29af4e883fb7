import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import { RateLimited } from "../contract/errors.ts"
import type { Account, IdentityVersions, KeyRecord } from "../domain/accounts.ts"
import type { Platform } from "../domain/plans.ts"
import { hashSecret, hintOf, makeSpendKey } from "../domain/secrets.ts"
import * as Row from "../store/rows.ts"
import { Audit } from "./Audit.ts"
import { Ids } from "./Ids.ts"
import { RateLimits } from "./RateLimits.ts"

export const AccountState = Schema.Literals(["active", "suspended"])

export type { Account, KeyRecord }

export interface MintedKey {
  readonly secret: string
  readonly key: KeyRecord
  readonly account: Account
}

/** A row of `accounts` (`created_ip` is written, never read). */
export const AccountRow = Schema.Struct({
  id: Schema.String,
  plan: Row.Plan,
  state: AccountState,
  email: Schema.NullOr(Schema.String),
  claimed_at: Row.NullableInt,
  grant_credits: Row.Int,
  balance_credits: Row.Int,
  entitlements: Row.Platforms,
  created_at: Row.Int,
  alert_threshold: Row.Int
})
export type AccountRow = typeof AccountRow.Type

/** An account with the spend key that named it. */
const KeyedAccountRow = Schema.Struct({
  ...AccountRow.fields,
  key_id: Schema.String,
  hint: Schema.String,
  revoked_at: Row.NullableInt,
  last_used_at: Row.NullableInt,
  key_platforms: Schema.NullOr(Row.Platforms),
  parent_key_id: Schema.NullOr(Schema.String),
  may_delegate: Schema.Boolean,
  parent_revoked_at: Row.NullableInt,
  parent_platforms: Schema.NullOr(Row.Platforms),
  identity_version: Row.Int,
  key_version: Row.Int
})

const decodeAccounts = Row.decoder(AccountRow, "accounts")
const decodeKeyedAccounts = Row.decoder(KeyedAccountRow, "api_keys joined with accounts")

export const toAccount = (row: AccountRow): Account => ({
  id: row.id,
  plan: row.plan,
  state: row.state,
  email: row.email,
  claimed: row.claimed_at !== null,
  grantCredits: row.grant_credits,
  balanceCredits: row.balance_credits,
  entitlements: row.entitlements,
  createdAt: row.created_at,
  alertThreshold: row.alert_threshold
})

/** A child's platforms: its own within its parent's (null: no list, every platform of the account). */
const boundedPlatforms = (
  own: ReadonlyArray<Platform> | null,
  parent: ReadonlyArray<Platform> | null
): ReadonlyArray<Platform> | null =>
  own === null ? parent : parent === null ? own : own.filter((platform) => parent.includes(platform))

/** Accounts and their spend keys. Secrets never reach the database: only their hashes do. */
export class Accounts extends Context.Service<
  Accounts,
  {
    /** A trial account with one key, at most `policy.mintPerIpHour` per client IP per hour. */
    readonly mintTrial: (ip: string) => Effect.Effect<MintedKey, RateLimited | SqlError>
    readonly findByKey: (
      secret: string
    ) => Effect.Effect<
      { key: KeyRecord; account: Account; lastUsedAt: number | null; versions: IdentityVersions } | undefined,
      SqlError
    >
    /** Records a key's use (the caller writes it at most once a minute per key). */
    readonly touchKey: (keyId: string, now: number) => Effect.Effect<void, SqlError>
    readonly get: (accountId: string) => Effect.Effect<Account | undefined, SqlError>
    /** The accounts an email governs, oldest first. */
    readonly ofEmail: (email: string) => Effect.Effect<ReadonlyArray<AccountRow>, SqlError>
    /** An account's row, locked until the caller's transaction ends (the ledger's lock order: first). */
    readonly lock: (accountId: string) => Effect.Effect<AccountRow | undefined, SqlError>
  }
>()("services/Accounts") {
  static readonly layer = Layer.effect(
    Accounts,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const ids = yield* Ids
      const audit = yield* Audit
      const limits = yield* RateLimits
      const { policy } = yield* AppConfig

      const get = Effect.fn("Accounts.get")(function* (accountId: string) {
        const rows = yield* sql`SELECT * FROM accounts WHERE id = ${accountId}`.pipe(
          Effect.flatMap(decodeAccounts)
        )
        return rows[0] === undefined ? undefined : toAccount(rows[0])
      })

      const ofEmail = (email: string) =>
        sql`SELECT * FROM accounts WHERE email = ${email} ORDER BY created_at, id`.pipe(
          Effect.flatMap(decodeAccounts)
        )

      const lock = (accountId: string) =>
        sql`SELECT * FROM accounts WHERE id = ${accountId} FOR UPDATE`.pipe(
          Effect.flatMap(decodeAccounts),
          Effect.map((rows) => rows[0])
        )

      const mintTrial = Effect.fn("Accounts.mintTrial")(function* (ip: string) {
        const limit = yield* limits.take({ key: `mint:${ip}`, limit: policy.mintPerIpHour, window: "1 hour" })
        if (!limit.allowed)
          return yield* new RateLimited({
            message: `At most ${policy.mintPerIpHour} keys per IP per hour. Keys from one IP share one free budget, so another key gains nothing; reuse the key you have.`,
            retry_after_seconds: limit.retryAfterSeconds
          })
        const now = yield* Clock.currentTimeMillis
        const accountId = yield* ids.newId("acct")
        const keyId = yield* ids.newId("key")
        const secret = makeSpendKey(yield* ids.secretBytes, true)
        const hint = hintOf(secret)
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`INSERT INTO accounts (id, plan, created_ip, created_at) VALUES (${accountId}, 'trial', ${ip}, ${now})`
            yield* sql`INSERT INTO api_keys (id, account_id, secret_hash, hint, created_at)
              VALUES (${keyId}, ${accountId}, ${hashSecret(secret)}, ${hint}, ${now})`
            yield* audit.record(accountId, "key.created", keyId)
          })
        )
        const account = yield* get(accountId)
        return { secret, key: { id: keyId, accountId, hint, revoked: false }, account: account! }
      })

      const findByKey = Effect.fn("Accounts.findByKey")(function* (secret: string) {
        const rows = yield* sql`
          SELECT a.*, k.id AS key_id, k.hint, k.revoked_at, k.last_used_at, k.platforms AS key_platforms,
            k.parent_key_id, k.may_delegate, k.identity_version AS key_version,
            p.revoked_at AS parent_revoked_at, p.platforms AS parent_platforms
          FROM api_keys k JOIN accounts a ON a.id = k.account_id
            LEFT JOIN api_keys p ON p.id = k.parent_key_id
          WHERE k.secret_hash = ${hashSecret(secret)}`.pipe(Effect.flatMap(decodeKeyedAccounts))
        const row = rows[0]
        if (row === undefined) return undefined
        // A child is bounded by its parent as the parent is now: it works while the parent works,
        // on the platforms both may call (the parent's change bumps the child's version too,
        // migrations/0022, so a charge from a child remembered before it is declined).
        const child = row.parent_key_id !== null
        const platforms = child
          ? boundedPlatforms(row.key_platforms, row.parent_platforms)
          : row.key_platforms
        return {
          key: {
            id: row.key_id,
            accountId: row.id,
            hint: row.hint,
            revoked: row.revoked_at !== null || (child && row.parent_revoked_at !== null),
            ...(platforms === null ? {} : { platforms }),
            ...(row.parent_key_id === null ? {} : { parentKeyId: row.parent_key_id }),
            ...(row.may_delegate && !child ? { mayDelegate: true as const } : {})
          },
          account: toAccount(row),
          lastUsedAt: row.last_used_at,
          versions: { account: row.identity_version, key: row.key_version }
        }
      })

      const touchKey = Effect.fn("Accounts.touchKey")(function* (keyId: string, now: number) {
        yield* sql`UPDATE api_keys SET last_used_at = ${now} WHERE id = ${keyId}`
      })

      return Accounts.of({ mintTrial, findByKey, get, touchKey, ofEmail, lock })
    })
  )
}
