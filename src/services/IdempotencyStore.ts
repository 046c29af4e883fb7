import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

export const replayWindowMs = 24 * 3_600_000
export const tombstoneMs = 7 * 24 * 3_600_000
/** A running claim older than this belongs to a dead call and may be taken over. */
export const runningLeaseMs = 60_000

export type BeginResult =
  | { readonly _tag: "Fresh" }
  | { readonly _tag: "Replay"; readonly response: string }
  | { readonly _tag: "Reused" }
  | { readonly _tag: "Running" }
  | { readonly _tag: "Expired" }

/**
 * Idempotency keys per account. Only a 200 result is stored (inside the settlement transaction,
 * so a charge and its stored result commit together); any error releases the key.
 */
export class IdempotencyStore extends Context.Service<
  IdempotencyStore,
  {
    readonly begin: (
      accountId: string,
      key: string,
      fingerprint: string
    ) => Effect.Effect<BeginResult, SqlError>
    /** Runs inside the settlement transaction. */
    readonly complete: (
      accountId: string,
      key: string,
      callId: string,
      response: string
    ) => Effect.Effect<void, SqlError>
    readonly release: (accountId: string, key: string) => Effect.Effect<void, SqlError>
    readonly purgeExpired: Effect.Effect<void, SqlError>
  }
>()("app/IdempotencyStore") {
  static readonly layer = Layer.effect(
    IdempotencyStore,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const begin: (
        accountId: string,
        key: string,
        fingerprint: string
      ) => Effect.Effect<BeginResult, SqlError> = Effect.fn("IdempotencyStore.begin")(function* (
        accountId: string,
        key: string,
        fingerprint: string
      ) {
        const now = yield* Clock.currentTimeMillis
        const inserted = yield* sql`INSERT INTO idempotency_keys
            (account_id, idem_key, fingerprint, state, lease_expires_at, created_at)
          VALUES (${accountId}, ${key}, ${fingerprint}, 'running', ${now + runningLeaseMs}, ${now})
          ON CONFLICT (account_id, idem_key) DO NOTHING RETURNING idem_key`
        if (inserted.length > 0) return { _tag: "Fresh" } as const
        const rows = yield* sql<{
          readonly fingerprint: string
          readonly state: string
          readonly response: string | null
          readonly lease_expires_at: number | string
          readonly replay_until: number | string | null
          readonly tombstone_until: number | string | null
        }>`SELECT fingerprint, state, response, lease_expires_at, replay_until, tombstone_until
          FROM idempotency_keys WHERE account_id = ${accountId} AND idem_key = ${key}`
        const row = rows[0]
        if (row === undefined) return yield* begin(accountId, key, fingerprint)
        if (row.state === "running") {
          if (Number(row.lease_expires_at) > now) {
            return row.fingerprint === fingerprint
              ? ({ _tag: "Running" } as const)
              : ({ _tag: "Reused" } as const)
          }
          // The call holding it died: take the key over.
          const taken = yield* sql`UPDATE idempotency_keys SET fingerprint = ${fingerprint},
              lease_expires_at = ${now + runningLeaseMs}, created_at = ${now}
            WHERE account_id = ${accountId} AND idem_key = ${key} AND state = 'running'
              AND lease_expires_at = ${row.lease_expires_at} RETURNING idem_key`
          return taken.length > 0 ? ({ _tag: "Fresh" } as const) : ({ _tag: "Running" } as const)
        }
        if (row.fingerprint !== fingerprint) return { _tag: "Reused" } as const
        if (Number(row.replay_until) > now && row.response !== null) {
          return { _tag: "Replay", response: row.response } as const
        }
        if (Number(row.tombstone_until) > now) return { _tag: "Expired" } as const
        // Past the tombstone the key is free again.
        yield* sql`DELETE FROM idempotency_keys WHERE account_id = ${accountId} AND idem_key = ${key}`
        return yield* begin(accountId, key, fingerprint)
      })

      const complete = Effect.fn("IdempotencyStore.complete")(function* (
        accountId: string,
        key: string,
        callId: string,
        response: string
      ) {
        const now = yield* Clock.currentTimeMillis
        yield* sql`UPDATE idempotency_keys SET state = 'done', call_id = ${callId}, response = ${response},
            replay_until = ${now + replayWindowMs}, tombstone_until = ${now + replayWindowMs + tombstoneMs}
          WHERE account_id = ${accountId} AND idem_key = ${key}`
      })

      const release = Effect.fn("IdempotencyStore.release")(function* (accountId: string, key: string) {
        yield* sql`DELETE FROM idempotency_keys WHERE account_id = ${accountId} AND idem_key = ${key} AND state = 'running'`
      })

      const purgeExpired = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        yield* sql`DELETE FROM idempotency_keys WHERE state = 'done' AND tombstone_until <= ${now}`
        // A claim whose call died and was never retried.
        yield* sql`DELETE FROM idempotency_keys WHERE state = 'running' AND lease_expires_at <= ${now}`
      })

      return IdempotencyStore.of({ begin, complete, release, purgeExpired })
    })
  )
}
