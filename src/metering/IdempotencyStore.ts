import { Clock, Context, Data, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import { retryAfterSeconds } from "../domain/lease.ts"
import * as Row from "../store/rows.ts"
import { type ResultMemory, resultMemory } from "./ResultMemory.ts"
import { CallRow } from "./receipt.ts"

/**
 * Completed results kept in memory per instance: a ring of this many bytes, outside V8's heap,
 * resident once it has filled. A replay is mostly a retry soon after the call; 8 MiB holds some
 * thousands of results (16 MiB cost 6-12 MiB more peak RSS in the bench: docs/performance.md,
 * round 26), and an older one is replayed from the database.
 */
const resultMemoryBytes = 8 * 1024 * 1024

export type BeginResult =
  | { readonly _tag: "Fresh" }
  | {
      readonly _tag: "Replay"
      /** The stored `CallResult` (JSON) and the call whose receipt it is answered with. */
      readonly result: string
      readonly call: CallRow
    }
  | { readonly _tag: "Reused" }
  | { readonly _tag: "Running"; readonly retryAfterSeconds: number }
  | { readonly _tag: "Expired" }

/** An idempotency key as `begin` finds it, with the heartbeat of the call holding it (if still reserved). */
const ClaimRow = Schema.Struct({
  fingerprint: Schema.String,
  state: Schema.Literals(["running", "done"]),
  response: Schema.NullOr(Schema.String),
  lease_expires_at: Row.Int,
  created_at: Row.Int,
  owner: Schema.NullOr(Schema.String),
  replay_until: Row.NullableInt,
  tombstone_until: Row.NullableInt,
  call: Schema.NullOr(CallRow)
})

const decodeClaims = Row.decoder(ClaimRow, "idempotency_keys")
const decodeBeats = Row.decoder(Schema.Struct({ heartbeat_at: Row.NullableInt }), "calls")

/**
 * The claim this call took is no longer its own: its lease expired and the key was purged or
 * taken over by a newer call. Completing it would overwrite or lose that call's result.
 */
export class ClaimLost extends Data.TaggedError("ClaimLost")<{
  readonly accountId: string
  readonly key: string
  readonly owner: string
}> {}

/**
 * Idempotency keys per account. A claim is taken by one call, named by `owner` (the call's id),
 * and only that call can complete or release it: a call that outlived its lease is fenced off.
 * Only a 200 result is stored (inside the settlement transaction, so a charge and its stored result
 * commit together, or neither does); any error releases the key.
 */
export class IdempotencyStore extends Context.Service<
  IdempotencyStore,
  {
    readonly begin: (
      accountId: string,
      key: string,
      fingerprint: string,
      owner: string
    ) => Effect.Effect<BeginResult, SqlError>
    /**
     * Stores the call's result (`CallResult` as JSON) inside the settlement transaction; fails with
     * ClaimLost (rolling it back) if `owner` lost the claim.
     */
    readonly complete: (
      accountId: string,
      key: string,
      owner: string,
      result: string
    ) => Effect.Effect<void, SqlError | ClaimLost>
    /** Frees the key for a new try; false when the claim was no longer `owner`'s (nothing is touched). */
    readonly release: (accountId: string, key: string, owner: string) => Effect.Effect<boolean, SqlError>
    readonly purgeExpired: Effect.Effect<void, SqlError>
    /** Completed keys' results in this instance's memory, for replays without the database. */
    readonly results: ResultMemory
  }
>()("metering/IdempotencyStore") {
  static readonly layer = Layer.effect(
    IdempotencyStore,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { leaseMs, policy } = yield* AppConfig
      const { replayWindowMs, tombstoneMs } = policy

      const begin: (
        accountId: string,
        key: string,
        fingerprint: string,
        owner: string
      ) => Effect.Effect<BeginResult, SqlError> = Effect.fn("IdempotencyStore.begin")(function* (
        accountId: string,
        key: string,
        fingerprint: string,
        owner: string
      ) {
        const now = yield* Clock.currentTimeMillis
        const inserted = yield* sql`INSERT INTO idempotency_keys
            (account_id, idem_key, fingerprint, state, owner, lease_expires_at, created_at)
          VALUES (${accountId}, ${key}, ${fingerprint}, 'running', ${owner}, ${now + leaseMs}, ${now})
          ON CONFLICT (account_id, idem_key) DO NOTHING RETURNING idem_key`
        if (inserted.length > 0) return { _tag: "Fresh" } as const
        const rows =
          yield* sql`SELECT k.fingerprint, k.state, k.response, k.lease_expires_at, k.created_at, k.owner,
            k.replay_until, k.tombstone_until,
            to_jsonb(c) || jsonb_build_object('parent_key_id', (SELECT p.parent_key_id FROM api_keys p WHERE p.id = c.key_id)) AS call
          FROM idempotency_keys k LEFT JOIN calls c ON c.id = k.call_id AND k.state = 'done'
          WHERE k.account_id = ${accountId} AND k.idem_key = ${key}`.pipe(Effect.flatMap(decodeClaims))
        const row = rows[0]
        if (row === undefined) return yield* begin(accountId, key, fingerprint, owner)
        if (row.state === "running") {
          const leaseExpiresAt = row.lease_expires_at
          if (leaseExpiresAt > now) {
            if (row.fingerprint !== fingerprint) return { _tag: "Reused" } as const
            // Only a caller turned away reads the holder's heartbeat (a replay never needs it).
            const [beat] = yield* sql`SELECT heartbeat_at FROM calls
              WHERE id = ${row.owner} AND state = 'reserved'`.pipe(Effect.flatMap(decodeBeats))
            const lastSeenAt = Math.max(row.created_at, beat?.heartbeat_at ?? 0)
            return {
              _tag: "Running",
              retryAfterSeconds: retryAfterSeconds({ leaseExpiresAt, lastSeenAt }, now)
            } as const
          }
          // The call holding it died (or stalled past its lease): take the key over. The holder is
          // fenced off from now on, since completing and releasing match on the owner.
          const taken = yield* sql`UPDATE idempotency_keys SET fingerprint = ${fingerprint}, owner = ${owner},
              lease_expires_at = ${now + leaseMs}, created_at = ${now}
            WHERE account_id = ${accountId} AND idem_key = ${key} AND state = 'running'
              AND lease_expires_at = ${row.lease_expires_at} RETURNING idem_key`
          return taken.length > 0
            ? ({ _tag: "Fresh" } as const)
            : yield* begin(accountId, key, fingerprint, owner)
        }
        if (row.fingerprint !== fingerprint) return { _tag: "Reused" } as const
        if ((row.replay_until ?? 0) > now && row.response !== null && row.call !== null) {
          return { _tag: "Replay", result: row.response, call: row.call } as const
        }
        if ((row.tombstone_until ?? 0) > now) return { _tag: "Expired" } as const
        // Past the tombstone the key is free again.
        yield* sql`DELETE FROM idempotency_keys WHERE account_id = ${accountId} AND idem_key = ${key}
          AND state = 'done' AND tombstone_until <= ${now}`
        return yield* begin(accountId, key, fingerprint, owner)
      })

      const complete = Effect.fn("IdempotencyStore.complete")(function* (
        accountId: string,
        key: string,
        owner: string,
        response: string
      ) {
        const now = yield* Clock.currentTimeMillis
        const updated =
          yield* sql`UPDATE idempotency_keys SET state = 'done', call_id = ${owner}, response = ${response},
            replay_until = ${now + replayWindowMs}, tombstone_until = ${now + replayWindowMs + tombstoneMs}
          WHERE account_id = ${accountId} AND idem_key = ${key} AND state = 'running' AND owner = ${owner}
          RETURNING idem_key`
        if (updated.length === 0) return yield* new ClaimLost({ accountId, key, owner })
      })

      const release = Effect.fn("IdempotencyStore.release")(function* (
        accountId: string,
        key: string,
        owner: string
      ) {
        const deleted = yield* sql`DELETE FROM idempotency_keys
          WHERE account_id = ${accountId} AND idem_key = ${key} AND state = 'running' AND owner = ${owner}
          RETURNING idem_key`
        return deleted.length > 0
      })

      const purgeExpired = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        yield* sql`DELETE FROM idempotency_keys WHERE state = 'done' AND tombstone_until <= ${now}`
        // A claim whose call died and was never retried.
        yield* sql`DELETE FROM idempotency_keys WHERE state = 'running' AND lease_expires_at <= ${now}`
      })

      const results = resultMemory(resultMemoryBytes)
      return IdempotencyStore.of({ begin, complete, release, purgeExpired, results })
    })
  )
}
