import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import { InvalidInput, NotFound } from "../contract/errors.ts"
import type { Account } from "../domain/accounts.ts"
import { identityPolicy } from "../domain/identity.ts"
import type { Plan } from "../domain/plans.ts"
import { hashSecret, hintOf, makeSpendKey } from "../domain/secrets.ts"
import * as Row from "../store/rows.ts"
import { WebhookEvents } from "../webhooks/WebhookEvents.ts"
import { Credits } from "./Credits.ts"
import { Ids } from "./Ids.ts"
import { KeyMemory } from "./KeyMemory.ts"

/** A key as the management surface lists it (never its secret). */
export interface KeyListing {
  readonly key_id: string
  readonly label: string | null
  readonly hint: string
  readonly created_at: string
  readonly last_used_at: string | null
  readonly revoked_at: string | null
}

/** A new key: its secret is in this answer only. */
export interface IssuedKey {
  readonly key_id: string
  readonly key: string
  readonly label: string | null
  readonly hint: string
  readonly created_at: string
}

const KeyRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  label: Schema.NullOr(Schema.String),
  hint: Schema.String,
  created_at: Row.Int,
  last_used_at: Row.NullableInt,
  revoked_at: Row.NullableInt
})
const decodeKeys = Row.decoder(KeyRow, "api_keys")
const decodeAlert = Row.decoder(
  Schema.Struct({ alert_threshold: Row.Int, balance_credits: Row.Int, grant_credits: Row.Int }),
  "accounts (alert)"
)

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

const listing = (row: typeof KeyRow.Type): KeyListing => ({
  key_id: row.id,
  label: row.label,
  hint: row.hint,
  created_at: new Date(row.created_at).toISOString(),
  last_used_at: iso(row.last_used_at),
  revoked_at: iso(row.revoked_at)
})

const decodeCount = Row.decoder(Schema.Struct({ n: Row.Int }), "api_keys (active)")
const decodeIds = Row.decoder(Schema.Struct({ id: Schema.String }), "api_keys (id)")

const tooManyKeys = (max: number) =>
  new InvalidInput({
    message: `This account has ${max} active keys, the most it may have. Revoke one it no longer needs (POST /v1/keys/revoke, or the dashboard's Keys page) before creating another; rotating a key keeps the count.`
  })

const unknownKey = (keyId: string) =>
  new NotFound({
    message: `No active key ${keyId} on this account. List the keys with GET /v1/keys.`,
    param: "key_id"
  })

/**
 * An account's spend keys, as its owner manages them, and its balance alert. Every change is one
 * transaction; a key of another account is NOT_FOUND, exactly like a key that does not exist.
 */
export class Keys extends Context.Service<
  Keys,
  {
    readonly list: (accountId: string) => Effect.Effect<ReadonlyArray<KeyListing>, SqlError>
    /**
     * Inserts a key (and queues `key.created`); joins the caller's transaction. Trial-plan accounts
     * get `svc_trial_` keys. `replaces`: the key a rotation revoked for it.
     */
    readonly issue: (input: {
      readonly accountId: string
      readonly plan: Plan
      readonly label: string | null
      readonly replaces?: string
    }) => Effect.Effect<IssuedKey, SqlError>
    /**
     * A key made by a signed-in owner; a trial account's first key earns the one-time grant. An
     * account at `maxActiveKeysPerAccount` working keys gets INVALID_INPUT until it revokes one.
     */
    readonly create: (input: {
      readonly account: Account
      readonly email: string
      readonly label: string | null
    }) => Effect.Effect<IssuedKey & { readonly grant_credits: number }, InvalidInput | SqlError>
    readonly rotate: (
      accountId: string,
      keyId: string
    ) => Effect.Effect<IssuedKey & { readonly replaces: string }, NotFound | SqlError>
    readonly revoke: (
      accountId: string,
      keyId: string
    ) => Effect.Effect<{ readonly key_id: string; readonly revoked_at: string }, NotFound | SqlError>
    /** Every active key of the account revoked; returns how many. Joins the caller's transaction. */
    readonly revokeAll: (accountId: string) => Effect.Effect<number, SqlError>
    readonly setAlert: (
      accountId: string,
      threshold: number
    ) => Effect.Effect<
      { readonly threshold: number; readonly balance_credits: number; readonly grant_credits: number },
      SqlError
    >
  }
>()("app/Keys") {
  static readonly layer = Layer.effect(
    Keys,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const keyMemory = yield* KeyMemory
      const ids = yield* Ids
      const credits = yield* Credits
      const events = yield* WebhookEvents
      const { maxActiveKeysPerAccount } = (yield* AppConfig).policy

      /** `key.created`, in the transaction that made the key (never its secret). */
      const created = (accountId: string, key: IssuedKey, replaces?: string) =>
        events.emit(accountId, "key.created", {
          key_id: key.key_id,
          label: key.label,
          hint: key.hint,
          created_at: key.created_at,
          ...(replaces === undefined ? {} : { replaces })
        })

      /** `key.revoked`, in the transaction that revoked it: `reason` says how. */
      const revoked = (
        accountId: string,
        keyId: string,
        at: number,
        reason: "revoked" | "rotated" | "rekey"
      ) =>
        events.emit(accountId, "key.revoked", {
          key_id: keyId,
          revoked_at: new Date(at).toISOString(),
          reason
        })

      const list = Effect.fn("Keys.list")(function* (accountId: string) {
        const now = yield* Clock.currentTimeMillis
        const since = now - identityPolicy.revokedKeysListedMs
        const rows = yield* sql`SELECT id, account_id, label, hint, created_at, last_used_at, revoked_at
          FROM api_keys WHERE account_id = ${accountId} AND (revoked_at IS NULL OR revoked_at >= ${since})
          ORDER BY created_at, id`.pipe(Effect.flatMap(decodeKeys))
        return rows.map(listing)
      })

      const issue = Effect.fn("Keys.issue")(function* (input: {
        readonly accountId: string
        readonly plan: Plan
        readonly label: string | null
        readonly replaces?: string
      }) {
        const now = yield* Clock.currentTimeMillis
        const keyId = yield* ids.newId("key")
        const secret = makeSpendKey(yield* ids.secretBytes, input.plan === "trial")
        const hint = hintOf(secret)
        yield* sql`INSERT INTO api_keys (id, account_id, secret_hash, hint, label, created_at)
          VALUES (${keyId}, ${input.accountId}, ${hashSecret(secret)}, ${hint}, ${input.label}, ${now})`
        const issued: IssuedKey = {
          key_id: keyId,
          key: secret,
          label: input.label,
          hint,
          created_at: new Date(now).toISOString()
        }
        yield* created(input.accountId, issued, input.replaces)
        return issued
      })

      const create = Effect.fn("Keys.create")(function* (input: {
        readonly account: Account
        readonly email: string
        readonly label: string | null
      }) {
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            // The account row is the lock that orders two keys created at once: two first keys (the
            // grant), and two creates at the last free place (the cap).
            yield* sql`SELECT id FROM accounts WHERE id = ${input.account.id} FOR UPDATE`
            const [active] = yield* sql`SELECT COUNT(*) AS n FROM api_keys
              WHERE account_id = ${input.account.id} AND revoked_at IS NULL`.pipe(Effect.flatMap(decodeCount))
            if ((active?.n ?? 0) >= maxActiveKeysPerAccount)
              return yield* tooManyKeys(maxActiveKeysPerAccount)
            const before = yield* sql`SELECT 1 FROM api_keys WHERE account_id = ${input.account.id} LIMIT 1`
            const issued = yield* issue({
              accountId: input.account.id,
              plan: input.account.plan,
              label: input.label
            })
            const grant =
              before.length === 0 && input.account.plan === "trial"
                ? yield* credits.grantOnce({
                    accountId: input.account.id,
                    email: input.email,
                    keyId: issued.key_id
                  })
                : 0
            return { ...issued, grant_credits: grant }
          })
        )
      })

      /** The account's active key `keyId`, locked; NOT_FOUND for a revoked key or another account's. */
      const activeKey = (accountId: string, keyId: string) =>
        Effect.gen(function* () {
          const rows = yield* sql`SELECT id, account_id, label, hint, created_at, last_used_at, revoked_at
            FROM api_keys WHERE id = ${keyId} AND account_id = ${accountId} FOR UPDATE`.pipe(
            Effect.flatMap(decodeKeys)
          )
          const row = rows[0]
          return row === undefined ? undefined : row
        })

      const rotate = Effect.fn("Keys.rotate")(function* (accountId: string, keyId: string) {
        const now = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const plan = yield* sql`SELECT plan FROM accounts WHERE id = ${accountId} FOR UPDATE`.pipe(
              Effect.flatMap(Row.decoder(Schema.Struct({ plan: Row.Plan }), "accounts (plan)"))
            )
            const old = yield* activeKey(accountId, keyId)
            if (old === undefined || old.revoked_at !== null || plan[0] === undefined) {
              return yield* unknownKey(keyId)
            }
            yield* keyMemory.changing(accountId)
            yield* sql`UPDATE api_keys SET revoked_at = ${now} WHERE id = ${keyId}`
            yield* revoked(accountId, keyId, now, "rotated")
            const issued = yield* issue({ accountId, plan: plan[0].plan, label: old.label, replaces: keyId })
            return { ...issued, replaces: keyId }
          })
        )
      })

      const revoke = Effect.fn("Keys.revoke")(function* (accountId: string, keyId: string) {
        const now = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const key = yield* activeKey(accountId, keyId)
            if (key === undefined) return yield* unknownKey(keyId)
            // Revoking a revoked key answers its revocation again (a retried request changes nothing).
            if (key.revoked_at !== null)
              return { key_id: keyId, revoked_at: new Date(key.revoked_at).toISOString() }
            yield* keyMemory.changing(accountId)
            yield* sql`UPDATE api_keys SET revoked_at = ${now} WHERE id = ${keyId}`
            yield* revoked(accountId, keyId, now, "revoked")
            return { key_id: keyId, revoked_at: new Date(now).toISOString() }
          })
        )
      })

      const revokeAll = Effect.fn("Keys.revokeAll")(function* (accountId: string) {
        const now = yield* Clock.currentTimeMillis
        yield* keyMemory.changing(accountId)
        const gone = yield* sql`UPDATE api_keys SET revoked_at = ${now}
          WHERE account_id = ${accountId} AND revoked_at IS NULL RETURNING id`.pipe(Effect.flatMap(decodeIds))
        for (const key of gone) yield* revoked(accountId, key.id, now, "rekey")
        return gone.length
      })

      const setAlert = Effect.fn("Keys.setAlert")(function* (accountId: string, threshold: number) {
        yield* keyMemory.changing(accountId)
        const rows = yield* sql`UPDATE accounts SET alert_threshold = ${threshold},
            alert_armed = svc_alert_armed(${threshold}, grant_credits + balance_credits)
          WHERE id = ${accountId} RETURNING alert_threshold, balance_credits, grant_credits`.pipe(
          Effect.flatMap(decodeAlert)
        )
        const row = rows[0]!
        return {
          threshold: row.alert_threshold,
          balance_credits: row.balance_credits,
          grant_credits: row.grant_credits
        }
      })

      return Keys.of({ list, issue, create, rotate, revoke, revokeAll, setAlert })
    })
  )
}
