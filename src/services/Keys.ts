import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import { InvalidInput, NotEntitled, NotFound, type RateLimited, Unauthorized } from "../contract/errors.ts"
import { type Account, grantedDelegation, type KeyRecord } from "../domain/accounts.ts"
import {
  applyChanges,
  type CapPeriod,
  capPeriods,
  capResetsAtIso,
  childLimits,
  type KeyLimits,
  type LimitChanges,
  type LimitRefusal,
  noLimits,
  platformsOf,
  refuseLimits
} from "../domain/keyLimits.ts"
import type { Plan, Platform } from "../domain/plans.ts"
import { hashSecret, hintOf, makeSpendKey } from "../domain/secrets.ts"
import { identityPolicy } from "../domain/signIn.ts"
import { dayOf } from "../domain/time.ts"
import * as Row from "../store/rows.ts"
import { Audit } from "./Audit.ts"
import { Credits } from "./Credits.ts"
import { Ids } from "./Ids.ts"
import { KeyMemory } from "./KeyMemory.ts"
import { RateLimits } from "./RateLimits.ts"
import { WebhookEvents } from "./WebhookEvents.ts"

/** A key's limits as the API shows them. */
export interface KeyLimitFields {
  readonly spend_cap_credits: number | null
  readonly cap_period: CapPeriod
  readonly platforms: ReadonlyArray<Platform> | null
  /** The owner granted this key the making of child keys (never a child's). */
  readonly may_delegate: boolean
}

/** A key as the management surface lists it (never its secret). */
export interface KeyListing extends KeyLimitFields {
  readonly key_id: string
  readonly label: string | null
  readonly hint: string
  readonly created_at: string
  readonly last_used_at: string | null
  readonly revoked_at: string | null
  /** The key that made this child key; null for the account's own keys. */
  readonly parent_key_id: string | null
  /** What a capped key has spent in its period (its children's spend included); null uncapped. */
  readonly spent_in_period: number | null
  /** When a day or month cap starts afresh; null otherwise. */
  readonly cap_resets_at: string | null
}

/** A new key: its secret is in this answer only. */
export interface IssuedKey extends KeyLimitFields {
  readonly key_id: string
  readonly key: string
  readonly label: string | null
  readonly hint: string
  readonly created_at: string
}

/** A child key as its parent makes it. */
export interface IssuedChildKey extends IssuedKey {
  readonly parent_key_id: string
}

const KeyRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  label: Schema.NullOr(Schema.String),
  hint: Schema.String,
  created_at: Row.Int,
  last_used_at: Row.NullableInt,
  revoked_at: Row.NullableInt,
  spend_cap_credits: Row.NullableInt,
  cap_period: Schema.Literals(capPeriods),
  platforms: Schema.NullOr(Row.Platforms),
  parent_key_id: Schema.NullOr(Schema.String),
  may_delegate: Schema.Boolean,
  spent: Row.NullableInt
})
type KeyRow = typeof KeyRow.Type
const decodeKeys = Row.decoder(KeyRow, "api_keys")
const decodeAlert = Row.decoder(
  Schema.Struct({ alert_threshold: Row.Int, balance_credits: Row.Int, grant_credits: Row.Int }),
  "accounts (alert)"
)
const decodeCount = Row.decoder(Schema.Struct({ n: Row.Int }), "api_keys (active)")
const decodeIds = Row.decoder(Schema.Struct({ id: Schema.String }), "api_keys (id)")
const decodeCapLeft = Row.decoder(Schema.Struct({ cap_left: Row.NullableInt }), "svc_key_cap")

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/** A key's columns with what its cap has spent in the period of `day`. */
const keyColumns = (day: number) =>
  `k.id, k.account_id, k.label, k.hint, k.created_at, k.last_used_at, k.revoked_at, k.spend_cap_credits,
   k.cap_period, k.platforms, k.parent_key_id, k.may_delegate,
   (SELECT s.spent FROM key_spend s WHERE s.key_id = k.id AND s.period = svc_period(k.cap_period, ${day})) AS spent`

const limitsOf = (row: KeyRow): KeyLimits => ({
  spendCapCredits: row.spend_cap_credits,
  capPeriod: row.cap_period,
  platforms: row.platforms
})

const limitFields = (limits: KeyLimits, mayDelegate: boolean): KeyLimitFields => ({
  spend_cap_credits: limits.spendCapCredits,
  cap_period: limits.capPeriod,
  platforms: limits.platforms,
  may_delegate: mayDelegate
})

const listing = (row: KeyRow, now: number): KeyListing => {
  const capped = row.spend_cap_credits !== null
  return {
    key_id: row.id,
    label: row.label,
    hint: row.hint,
    created_at: new Date(row.created_at).toISOString(),
    last_used_at: iso(row.last_used_at),
    revoked_at: iso(row.revoked_at),
    parent_key_id: row.parent_key_id,
    ...limitFields(limitsOf(row), row.may_delegate),
    spent_in_period: capped ? (row.spent ?? 0) : null,
    cap_resets_at: capped ? (capResetsAtIso(row.cap_period, now) ?? null) : null
  }
}

const tooManyKeys = (max: number) =>
  new InvalidInput({
    message: `This account has ${max} active keys, the most it may have. Revoke one it no longer needs (POST /v1/keys/revoke, or the dashboard's Keys page) before creating another; rotating a key keeps the count.`
  })

const unknownKey = (keyId: string) =>
  new NotFound({
    message: `No active key ${keyId} on this account. List the keys with GET /v1/keys.`,
    param: "key_id"
  })

const refused = (refusal: LimitRefusal) => new InvalidInput(refusal)

/** Why a bearer may not make, list or change child keys. */
const notDelegating = (key: Pick<KeyRecord, "id" | "parentKeyId">) =>
  new NotEntitled({
    message:
      key.parentKeyId !== undefined
        ? "A child key never makes, lists or changes child keys; the key that made it does."
        : key.id.startsWith("key_")
          ? "This key may not make child keys: its account's owner grants that with `may_delegate` (POST /v1/keys/update with a management token, or the dashboard's Keys page). A trial account nobody has claimed has no owner to grant it."
          : "Child keys are made with a spend key its owner lets delegate (`may_delegate`). With a management token, create a key with limits instead: POST /v1/keys."
  })

const inactiveParent = () =>
  new Unauthorized({ message: "This key is not active. Mint a new key or recover the account." })

/** A change of a child key by its parent: an absent field stays, the cap cannot be cleared. */
export interface ChildChanges {
  readonly spendCapCredits?: number | null
  readonly platforms?: ReadonlyArray<Platform> | null
}

const decodeDelegating = Row.decoder(
  Schema.Struct({
    revoked_at: Row.NullableInt,
    may_delegate: Schema.Boolean,
    parent_key_id: Schema.NullOr(Schema.String),
    platforms: Schema.NullOr(Row.Platforms),
    claimed_at: Row.NullableInt
  }),
  "api_keys (delegating)"
)

/**
 * An account's spend keys, as its owner manages them (with their limits: a spend cap and platforms;
 * `may_delegate`), the child keys a delegating key makes, and the account's balance alert.
 * Every change is one transaction that locks the account's row first, then the key rows, as every
 * charge does: a cap and the charges it holds are never read apart, and a child is never made
 * beside its parent's revocation or rotation (each waits for the other, and creation reads the
 * parent again under the lock). A key of another account is NOT_FOUND, exactly like a key that
 * does not exist.
 */
export class Keys extends Context.Service<
  Keys,
  {
    readonly list: (accountId: string) => Effect.Effect<ReadonlyArray<KeyListing>, SqlError>
    /** Inserts a key; joins the caller's transaction. Trial-plan accounts get `svc_trial_` keys. */
    readonly issue: (input: {
      readonly accountId: string
      readonly plan: Plan
      readonly label: string | null
      readonly limits?: KeyLimits
      readonly mayDelegate?: boolean
      readonly parentKeyId?: string
      /** The key a rotation revoked for this one (in its `key.created` event). */
      readonly replaces?: string
    }) => Effect.Effect<IssuedKey, SqlError>
    /**
     * A key made by a signed-in owner, with its limits; a trial account's first key earns the
     * one-time grant. An account at `maxActiveKeysPerAccount` working keys gets INVALID_INPUT
     * until it revokes one.
     */
    readonly create: (input: {
      readonly account: Account
      readonly email: string
      readonly label: string | null
      readonly limits: KeyLimits
      readonly mayDelegate: boolean
    }) => Effect.Effect<IssuedKey & { readonly grant_credits: number }, InvalidInput | SqlError>
    /**
     * Changes a key's limits and `may_delegate` (an absent field stays, `null` clears); a cap counts
     * from what the key has spent. A child key never delegates.
     */
    readonly update: (
      account: Account,
      keyId: string,
      changes: LimitChanges & { readonly mayDelegate?: boolean }
    ) => Effect.Effect<KeyListing, InvalidInput | NotFound | SqlError>
    readonly rotate: (
      accountId: string,
      keyId: string
    ) => Effect.Effect<IssuedKey & { readonly replaces: string }, NotFound | SqlError>
    /** Revokes a key and, with it, every child key it made. */
    readonly revoke: (
      accountId: string,
      keyId: string
    ) => Effect.Effect<{ readonly key_id: string; readonly revoked_at: string }, NotFound | SqlError>
    /** Every active key of the account revoked; returns how many. Joins the caller's transaction. */
    readonly revokeAll: (accountId: string) => Effect.Effect<number, SqlError>
    /**
     * A child key made by a delegating key (`may_delegate`, read again under the account's lock),
     * inside that key's limits (see `childLimits`); a child key cannot make children, and a key has
     * at most `maxChildKeysPerKey` working ones. Any other bearer is NOT_ENTITLED.
     */
    readonly createChild: (
      parent: { readonly key: KeyRecord; readonly account: Account },
      input: { readonly label: string | null; readonly limits: KeyLimits }
    ) => Effect.Effect<IssuedChildKey, InvalidInput | NotEntitled | Unauthorized | RateLimited | SqlError>
    readonly children: (
      parent: KeyRecord
    ) => Effect.Effect<ReadonlyArray<KeyListing>, NotEntitled | Unauthorized | SqlError>
    readonly revokeChild: (
      parent: KeyRecord,
      childKeyId: string
    ) => Effect.Effect<
      { readonly key_id: string; readonly revoked_at: string },
      NotFound | NotEntitled | Unauthorized | RateLimited | SqlError
    >
    /** A child's cap and platforms changed by its parent, within the parent's own (`childLimits`). */
    readonly updateChild: (
      parent: { readonly key: KeyRecord; readonly account: Account },
      childKeyId: string,
      changes: ChildChanges
    ) => Effect.Effect<KeyListing, InvalidInput | NotFound | NotEntitled | Unauthorized | SqlError>
    readonly setAlert: (
      accountId: string,
      threshold: number
    ) => Effect.Effect<
      { readonly threshold: number; readonly balance_credits: number; readonly grant_credits: number },
      SqlError
    >
  }
>()("services/Keys") {
  static readonly layer = Layer.effect(
    Keys,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const keyMemory = yield* KeyMemory
      const ids = yield* Ids
      const credits = yield* Credits
      const events = yield* WebhookEvents
      const audit = yield* Audit
      const { maxActiveKeysPerAccount, maxChildKeysPerKey, maxChildKeysPerAccount } = (yield* AppConfig)
        .policy
      const { childKeyChangesPerKey, childKeyChangesPerAccount } = (yield* AppConfig).policy
      const rateLimits = yield* RateLimits

      /**
       * Child keys made or revoked, counted together per parent key and per account: RATE_LIMITED
       * (with retry_after_seconds) past CHILD_KEY_CHANGES_PER_KEY or CHILD_KEY_CHANGES_PER_ACCOUNT.
       */
      const childChange = (parent: KeyRecord) =>
        rateLimits.takeAll(
          [
            { key: `child-keys:key:${parent.id}`, rule: childKeyChangesPerKey },
            { key: `child-keys:account:${parent.accountId}`, rule: childKeyChangesPerAccount }
          ],
          "child key"
        )

      /** `key.created`, in the transaction that made the key (never its secret). */
      const created = (accountId: string, key: IssuedKey, more: Record<string, unknown>) =>
        events.emit(accountId, "key.created", {
          key_id: key.key_id,
          label: key.label,
          hint: key.hint,
          created_at: key.created_at,
          ...more
        })

      /** `key.revoked` for each key, in the transaction that revoked them: `reason` says how. */
      const revoked = (
        accountId: string,
        keyIds: ReadonlyArray<string>,
        at: number,
        reason: "revoked" | "rotated" | "rekey" | "parent_revoked"
      ) =>
        Effect.forEach(
          keyIds,
          (keyId) =>
            events.emit(accountId, "key.revoked", {
              key_id: keyId,
              revoked_at: new Date(at).toISOString(),
              reason
            }),
          { discard: true }
        )

      const lockAccount = (accountId: string) =>
        sql`SELECT id FROM accounts WHERE id = ${accountId} FOR UPDATE`

      /** Locks the account's row, as `lockAccount`, and reads its plan as it is now. */
      const lockedPlan = (accountId: string) =>
        sql`SELECT plan FROM accounts WHERE id = ${accountId} FOR UPDATE`.pipe(
          Effect.flatMap(Row.decoder(Schema.Struct({ plan: Row.Plan }), "accounts (plan)")),
          Effect.map((rows) => rows[0]?.plan)
        )

      const list = Effect.fn("Keys.list")(function* (accountId: string) {
        const now = yield* Clock.currentTimeMillis
        const since = now - identityPolicy.revokedKeysListedMs
        const rows = yield* sql`SELECT ${sql.literal(keyColumns(dayOf(now)))} FROM api_keys k
          WHERE k.account_id = ${accountId} AND (k.revoked_at IS NULL OR k.revoked_at >= ${since})
          ORDER BY k.created_at, k.id`.pipe(Effect.flatMap(decodeKeys))
        return rows.map((row) => listing(row, now))
      })

      /**
       * Starts a capped key's counter for the current period from what it (and its children) really
       * spent in it; inside the caller's transaction, with the account locked.
       */
      const countFromCalls = (keyId: string, now: number) =>
        sql`INSERT INTO key_spend (key_id, period, spent)
          SELECT k.id, svc_period(k.cap_period, ${dayOf(now)}), svc_key_spent(k.id, k.cap_period, ${dayOf(now)})
          FROM api_keys k WHERE k.id = ${keyId} AND k.spend_cap_credits IS NOT NULL
          ON CONFLICT (key_id, period) DO UPDATE SET spent = EXCLUDED.spent`

      const issue = Effect.fn("Keys.issue")(function* (input: {
        readonly accountId: string
        readonly plan: Plan
        readonly label: string | null
        readonly limits?: KeyLimits
        readonly mayDelegate?: boolean
        readonly parentKeyId?: string
        readonly replaces?: string
      }) {
        const now = yield* Clock.currentTimeMillis
        const keyId = yield* ids.newId("key")
        const secret = makeSpendKey(yield* ids.secretBytes, input.plan === "trial")
        const hint = hintOf(secret)
        const limits = input.limits ?? noLimits
        const mayDelegate = input.parentKeyId === undefined && input.mayDelegate === true
        yield* sql`INSERT INTO api_keys (id, account_id, secret_hash, hint, label, created_at, spend_cap_credits,
            cap_period, platforms, parent_key_id, may_delegate)
          VALUES (${keyId}, ${input.accountId}, ${hashSecret(secret)}, ${hint}, ${input.label}, ${now},
            ${limits.spendCapCredits}, ${limits.capPeriod},
            ${limits.platforms === null ? null : limits.platforms.join(",")}, ${input.parentKeyId ?? null},
            ${mayDelegate})`
        const issued = {
          key_id: keyId,
          key: secret,
          label: input.label,
          hint,
          created_at: new Date(now).toISOString(),
          ...limitFields(limits, mayDelegate)
        } satisfies IssuedKey
        yield* created(input.accountId, issued, {
          ...(input.parentKeyId === undefined ? {} : { parent_key_id: input.parentKeyId }),
          ...(input.replaces === undefined ? {} : { replaces: input.replaces })
        })
        return issued
      })

      /**
       * Working keys: the account's own (children have their own pool, so a spend key cannot fill
       * the owner's places with them), a key's children, or every child of the account.
       */
      const activeCount = (where: "account" | "parent" | "children", id: string) =>
        (where === "account"
          ? sql`SELECT COUNT(*) AS n FROM api_keys
              WHERE account_id = ${id} AND revoked_at IS NULL AND parent_key_id IS NULL`
          : where === "parent"
            ? sql`SELECT COUNT(*) AS n FROM api_keys WHERE parent_key_id = ${id} AND revoked_at IS NULL`
            : sql`SELECT COUNT(*) AS n FROM api_keys
              WHERE account_id = ${id} AND revoked_at IS NULL AND parent_key_id IS NOT NULL`
        ).pipe(
          Effect.flatMap(decodeCount),
          Effect.map((rows) => rows[0]?.n ?? 0)
        )

      const create = Effect.fn("Keys.create")(function* (input: {
        readonly account: Account
        readonly email: string
        readonly label: string | null
        readonly limits: KeyLimits
        readonly mayDelegate: boolean
      }) {
        const refusal = refuseLimits(input.limits, input.account)
        if (refusal !== undefined) return yield* refused(refusal)
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            // The account row is the lock that orders two keys created at once: two first keys (the
            // grant), and two creates at the last free place (the cap).
            // The plan as the locked row says it now, not as the caller's copy of the account remembers
            // it: a key made after a purchase is a paid key (`svc_`), even from a sign-in made before it.
            const plan = (yield* lockedPlan(input.account.id)) ?? input.account.plan
            if ((yield* activeCount("account", input.account.id)) >= maxActiveKeysPerAccount)
              return yield* tooManyKeys(maxActiveKeysPerAccount)
            const before = yield* sql`SELECT 1 FROM api_keys WHERE account_id = ${input.account.id} LIMIT 1`
            const issued = yield* issue({
              accountId: input.account.id,
              plan,
              label: input.label,
              limits: input.limits,
              mayDelegate: input.mayDelegate
            })
            yield* audit.record(input.account.id, "key.created", issued.key_id)
            const grant =
              before.length === 0 && plan === "trial"
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

      const keyOf = (accountId: string, keyId: string, now: number) =>
        sql`SELECT ${sql.literal(keyColumns(dayOf(now)))} FROM api_keys k
          WHERE k.id = ${keyId} AND k.account_id = ${accountId} FOR UPDATE OF k`.pipe(
          Effect.flatMap(decodeKeys),
          Effect.map((rows) => rows[0])
        )

      const update = Effect.fn("Keys.update")(function* (
        account: Account,
        keyId: string,
        changes: LimitChanges & { readonly mayDelegate?: boolean }
      ) {
        const now = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* lockAccount(account.id)
            const key = yield* keyOf(account.id, keyId, now)
            if (key === undefined || key.revoked_at !== null) return yield* unknownKey(keyId)
            const limits = applyChanges(limitsOf(key), changes)
            const refusal = refuseLimits(limits, account)
            if (refusal !== undefined) return yield* refused(refusal)
            if (changes.mayDelegate === true && key.parent_key_id !== null)
              return yield* new InvalidInput({
                message: "A child key never makes child keys; grant `may_delegate` to a key of the account.",
                param: "may_delegate"
              })
            const mayDelegate = changes.mayDelegate ?? key.may_delegate
            yield* keyMemory.changing(account.id)
            yield* sql`UPDATE api_keys SET spend_cap_credits = ${limits.spendCapCredits},
                cap_period = ${limits.capPeriod},
                platforms = ${limits.platforms === null ? null : limits.platforms.join(",")},
                may_delegate = ${mayDelegate}
              WHERE id = ${keyId}`
            yield* countFromCalls(keyId, now)
            yield* audit.record(account.id, "key.updated", keyId)
            const updated = yield* keyOf(account.id, keyId, now)
            return listing(updated!, now)
          })
        )
      })

      /** Revokes a key's working children; inside the caller's transaction. */
      const revokeChildrenOf = (accountId: string, keyId: string, now: number) =>
        sql`UPDATE api_keys SET revoked_at = ${now} WHERE parent_key_id = ${keyId} AND revoked_at IS NULL
          RETURNING id`.pipe(
          Effect.flatMap(decodeIds),
          Effect.flatMap((children) =>
            revoked(
              accountId,
              children.map((child) => child.id),
              now,
              "parent_revoked"
            )
          )
        )

      const rotate = Effect.fn("Keys.rotate")(function* (accountId: string, keyId: string) {
        const now = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const plan = yield* sql`SELECT plan FROM accounts WHERE id = ${accountId} FOR UPDATE`.pipe(
              Effect.flatMap(Row.decoder(Schema.Struct({ plan: Row.Plan }), "accounts (plan)"))
            )
            const old = yield* keyOf(accountId, keyId, now)
            if (old === undefined || old.revoked_at !== null || plan[0] === undefined) {
              return yield* unknownKey(keyId)
            }
            yield* keyMemory.changing(accountId)
            yield* sql`UPDATE api_keys SET revoked_at = ${now} WHERE id = ${keyId}`
            yield* revoked(accountId, [keyId], now, "rotated")
            yield* revokeChildrenOf(accountId, keyId, now)
            // The new secret keeps the key's label and limits; its cap counts afresh from the calls.
            const issued = yield* issue({
              accountId,
              plan: plan[0].plan,
              label: old.label,
              limits: limitsOf(old),
              mayDelegate: old.may_delegate,
              replaces: keyId,
              ...(old.parent_key_id === null ? {} : { parentKeyId: old.parent_key_id })
            })
            yield* countFromCalls(issued.key_id, now)
            yield* audit.record(accountId, "key.rotated", keyId)
            return { ...issued, replaces: keyId }
          })
        )
      })

      const revokeWhere = <E = never>(
        accountId: string,
        keyId: string,
        parent: { readonly id: string; readonly check: Effect.Effect<unknown, E> } | undefined
      ) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const parentKeyId = parent?.id
          return yield* sql.withTransaction(
            Effect.gen(function* () {
              yield* lockAccount(accountId)
              if (parent !== undefined) yield* parent.check
              const key = yield* keyOf(accountId, keyId, now)
              if (key === undefined || (parentKeyId !== undefined && key.parent_key_id !== parentKeyId))
                return yield* unknownKey(keyId)
              // Revoking a revoked key answers its revocation again (a retried request changes nothing).
              if (key.revoked_at !== null)
                return { key_id: keyId, revoked_at: new Date(key.revoked_at).toISOString() }
              yield* keyMemory.changing(accountId)
              yield* sql`UPDATE api_keys SET revoked_at = ${now} WHERE id = ${keyId}`
              yield* revoked(accountId, [keyId], now, "revoked")
              yield* revokeChildrenOf(accountId, keyId, now)
              yield* audit.record(
                accountId,
                parentKeyId === undefined ? "key.revoked" : "child_key.revoked",
                keyId
              )
              return { key_id: keyId, revoked_at: new Date(now).toISOString() }
            })
          )
        })

      const revoke = Effect.fn("Keys.revoke")(function* (accountId: string, keyId: string) {
        return yield* revokeWhere(accountId, keyId, undefined)
      })

      const revokeAll = Effect.fn("Keys.revokeAll")(function* (accountId: string) {
        const now = yield* Clock.currentTimeMillis
        yield* keyMemory.changing(accountId)
        const gone = yield* sql`UPDATE api_keys SET revoked_at = ${now}
          WHERE account_id = ${accountId} AND revoked_at IS NULL RETURNING id`.pipe(Effect.flatMap(decodeIds))
        yield* revoked(
          accountId,
          gone.map((key) => key.id),
          now,
          "rekey"
        )
        return gone.length
      })

      /**
       * The bearer as a parent: a working key of a claimed account, not a child, its owner's grant
       * (`may_delegate`) on it. Checked first on the record the bearer was read as, then on the row
       * as it is now (`lock`: inside a transaction that has locked the account, the key's row too).
       */
      const delegating = (parent: KeyRecord, lock: boolean) =>
        Effect.gen(function* () {
          if (!grantedDelegation(parent)) return yield* notDelegating(parent)
          const rows = yield* (
            lock
              ? sql`SELECT k.revoked_at, k.may_delegate, k.parent_key_id, k.platforms, a.claimed_at
                  FROM api_keys k JOIN accounts a ON a.id = k.account_id
                  WHERE k.id = ${parent.id} AND k.account_id = ${parent.accountId} FOR UPDATE OF k`
              : sql`SELECT k.revoked_at, k.may_delegate, k.parent_key_id, k.platforms, a.claimed_at
                  FROM api_keys k JOIN accounts a ON a.id = k.account_id
                  WHERE k.id = ${parent.id} AND k.account_id = ${parent.accountId}`
          ).pipe(Effect.flatMap(decodeDelegating))
          const row = rows[0]
          if (row === undefined || row.revoked_at !== null) return yield* inactiveParent()
          if (!row.may_delegate || row.parent_key_id !== null || row.claimed_at === null)
            return yield* notDelegating(parent)
          return row
        })

      /** What the parent's cap has left now (undefined: uncapped); under the account's lock. */
      const parentCapLeft = (parentKeyId: string, now: number) =>
        sql`SELECT cap_left FROM svc_key_cap(${parentKeyId}, ${dayOf(now)})`.pipe(
          Effect.flatMap(decodeCapLeft),
          Effect.map(([cap]) =>
            cap?.cap_left === null || cap === undefined ? undefined : Math.max(0, cap.cap_left)
          )
        )

      const createChild = Effect.fn("Keys.createChild")(function* (
        parent: { readonly key: KeyRecord; readonly account: Account },
        input: { readonly label: string | null; readonly limits: KeyLimits }
      ) {
        if (!grantedDelegation(parent.key)) return yield* notDelegating(parent.key)
        const now = yield* Clock.currentTimeMillis
        const asked = refuseLimits(input.limits, parent.account)
        if (asked !== undefined) return yield* refused(asked)
        yield* childChange(parent.key)
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            // The account's row, then the parent's: the order revoke and rotate take, so a child is
            // made before the parent's end (and revoked with it) or refused after it.
            const plan = (yield* lockedPlan(parent.account.id)) ?? parent.account.plan
            const row = yield* delegating(parent.key, true)
            const limits = childLimits(input.limits, {
              capLeft: yield* parentCapLeft(parent.key.id, now),
              platforms: platformsOf(parent.account, {
                ...parent.key,
                ...(row.platforms === null ? {} : { platforms: row.platforms })
              })
            })
            if ("param" in limits) return yield* refused(limits)
            if ((yield* activeCount("parent", parent.key.id)) >= maxChildKeysPerKey)
              return yield* new InvalidInput({
                message: `This key has ${maxChildKeysPerKey} working child keys, the most it may have. Revoke one (POST /v1/keys/child/revoke) before making another.`
              })
            // Children have their own pool: the owner's `maxActiveKeysPerAccount` places stay the owner's.
            if ((yield* activeCount("children", parent.account.id)) >= maxChildKeysPerAccount)
              return yield* new InvalidInput({
                message: `This account has ${maxChildKeysPerAccount} working child keys, the most it may have. Revoke some (POST /v1/keys/child/revoke) before making another.`
              })
            const issued = yield* issue({
              accountId: parent.account.id,
              plan,
              label: input.label,
              limits,
              parentKeyId: parent.key.id
            })
            yield* audit.record(parent.account.id, "child_key.created", issued.key_id)
            return { ...issued, parent_key_id: parent.key.id } satisfies IssuedChildKey
          })
        )
      })

      const children = Effect.fn("Keys.children")(function* (parent: KeyRecord) {
        yield* delegating(parent, false)
        const now = yield* Clock.currentTimeMillis
        const since = now - identityPolicy.revokedKeysListedMs
        const rows = yield* sql`SELECT ${sql.literal(keyColumns(dayOf(now)))} FROM api_keys k
          WHERE k.parent_key_id = ${parent.id} AND (k.revoked_at IS NULL OR k.revoked_at >= ${since})
          ORDER BY k.created_at, k.id`.pipe(Effect.flatMap(decodeKeys))
        return rows.map((row) => listing(row, now))
      })

      const revokeChild = Effect.fn("Keys.revokeChild")(function* (parent: KeyRecord, childKeyId: string) {
        if (!grantedDelegation(parent)) return yield* notDelegating(parent)
        yield* childChange(parent)
        return yield* revokeWhere(parent.accountId, childKeyId, {
          id: parent.id,
          check: delegating(parent, true)
        })
      })

      const updateChild = Effect.fn("Keys.updateChild")(function* (
        parent: { readonly key: KeyRecord; readonly account: Account },
        childKeyId: string,
        changes: ChildChanges
      ) {
        if (!grantedDelegation(parent.key)) return yield* notDelegating(parent.key)
        const now = yield* Clock.currentTimeMillis
        const accountId = parent.account.id
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* lockAccount(accountId)
            const row = yield* delegating(parent.key, true)
            const child = yield* keyOf(accountId, childKeyId, now)
            if (child === undefined || child.revoked_at !== null || child.parent_key_id !== parent.key.id)
              return yield* unknownKey(childKeyId)
            // Only what the parent changes is judged: a cap within what the parent's cap has left, a
            // list of platforms within the parent's (cleared: the parent's, as at creation).
            const asked: KeyLimits = {
              ...limitsOf(child),
              spendCapCredits:
                changes.spendCapCredits === undefined ? child.spend_cap_credits : changes.spendCapCredits,
              platforms: changes.platforms ?? null
            }
            const outsideAccount = refuseLimits(asked, parent.account)
            if (outsideAccount !== undefined) return yield* refused(outsideAccount)
            const judged = childLimits(asked, {
              capLeft:
                changes.spendCapCredits === undefined ? undefined : yield* parentCapLeft(parent.key.id, now),
              platforms: platformsOf(parent.account, {
                ...parent.key,
                ...(row.platforms === null ? {} : { platforms: row.platforms })
              })
            })
            if ("param" in judged) return yield* refused(judged)
            const limits =
              changes.platforms === undefined ? { ...judged, platforms: child.platforms } : judged
            yield* keyMemory.changing(accountId)
            yield* sql`UPDATE api_keys SET spend_cap_credits = ${limits.spendCapCredits},
                platforms = ${limits.platforms === null ? null : limits.platforms.join(",")}
              WHERE id = ${childKeyId}`
            yield* countFromCalls(childKeyId, now)
            yield* audit.record(accountId, "child_key.updated", childKeyId)
            const updated = yield* keyOf(accountId, childKeyId, now)
            return listing(updated!, now)
          })
        )
      })

      const setAlert = Effect.fn("Keys.setAlert")(function* (accountId: string, threshold: number) {
        yield* keyMemory.changing(accountId)
        const rows = yield* sql.withTransaction(
          Effect.tap(
            sql`UPDATE accounts SET alert_threshold = ${threshold},
                alert_armed = svc_alert_armed(${threshold}, grant_credits + balance_credits)
              WHERE id = ${accountId} RETURNING alert_threshold, balance_credits, grant_credits`.pipe(
              Effect.flatMap(decodeAlert)
            ),
            () => audit.record(accountId, "alert.set", String(threshold))
          )
        )
        const row = rows[0]!
        return {
          threshold: row.alert_threshold,
          balance_credits: row.balance_credits,
          grant_credits: row.grant_credits
        }
      })

      return Keys.of({
        list,
        issue,
        create,
        update,
        rotate,
        revoke,
        revokeAll,
        createChild,
        children,
        revokeChild,
        updateChild,
        setAlert
      })
    })
  )
}
