import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import * as Row from "../store/rows.ts"

/**
 * oidc-provider's storage over the service's own `SqlClient` (PGlite or PostgreSQL): one table for
 * every model, so a token revoked on one instance is gone for all of them at once. The library
 * never deletes expired rows; `sweepExpired` does. Every model it stores expires but two: a
 * dynamic registration (`Client`) and its `RegistrationAccessToken` have no lifetime of their own,
 * so they get one here (`unusedClientMs`) until an account connects the client (`adoptClient`).
 */

type Payload = Record<string, unknown>

/**
 * oidc-provider reads the wall clock for every expiry and consumption it checks, so its rows expire
 * and are consumed by that same clock (not the service's `Clock`, which tests move virtually).
 */
const libraryNow = Effect.sync(() => Date.now())

/** Runs one storage step on the service's database (the library calls plain async methods). */
export type RunSql = <A>(effect: Effect.Effect<A, SqlError, SqlClient.SqlClient>) => Promise<A>

const RecordRow = Schema.Struct({ payload: Schema.String, consumed_at: Row.NullableInt })
const decodeRecords = Row.decoder(RecordRow, "oauth_records")

const text = (value: unknown) => (typeof value === "string" ? value : null)

const read = (rows: ReadonlyArray<typeof RecordRow.Type>): Payload | undefined => {
  const row = rows[0]
  if (row === undefined) return undefined
  const payload = JSON.parse(row.payload) as Payload
  return row.consumed_at === null
    ? payload
    : { ...payload, consumed: Math.max(1, Math.floor(row.consumed_at / 1000)) }
}

/** The models the library stores without an expiry: a registration lives until it is used. */
const registrationModels = new Set(["Client", "RegistrationAccessToken"])

/** The adapter class the library instantiates once per model name. */
export const sqlAdapter = (run: RunSql, options: { readonly unusedClientMs: number }) =>
  class SqlAdapter {
    readonly model: string
    constructor(model: string) {
      this.model = model
    }

    upsert(id: string, payload: Payload, expiresIn: number | undefined) {
      const model = this.model
      return run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const now = yield* libraryNow
          const expiresAt =
            expiresIn !== undefined
              ? now + expiresIn * 1000
              : registrationModels.has(model)
                ? now + options.unusedClientMs
                : null
          yield* sql`INSERT INTO oauth_records
              (model, id, payload, grant_id, uid, user_code, account_id, client_id, expires_at)
            VALUES (${model}, ${id}, ${JSON.stringify(payload)}, ${text(payload.grantId)}, ${text(payload.uid)},
              ${text(payload.userCode)}, ${text(payload.accountId)}, ${text(payload.clientId)}, ${expiresAt})
            ON CONFLICT (model, id) DO UPDATE SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id,
              uid = EXCLUDED.uid, user_code = EXCLUDED.user_code, account_id = EXCLUDED.account_id,
              client_id = EXCLUDED.client_id, expires_at = EXCLUDED.expires_at`
        })
      )
    }

    private findWhere(column: "id" | "uid" | "user_code", value: string) {
      const model = this.model
      return run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const now = yield* libraryNow
          const rows = yield* sql`SELECT payload, consumed_at FROM oauth_records
            WHERE model = ${model} AND ${sql(column)} = ${value} AND (expires_at IS NULL OR expires_at > ${now})
            LIMIT 1`.pipe(Effect.flatMap(decodeRecords))
          return read(rows)
        })
      )
    }

    find(id: string) {
      return this.findWhere("id", id)
    }

    findByUid(uid: string) {
      return this.findWhere("uid", uid)
    }

    findByUserCode(userCode: string) {
      return this.findWhere("user_code", userCode)
    }

    consume(id: string) {
      const model = this.model
      return run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const now = yield* libraryNow
          yield* sql`UPDATE oauth_records SET consumed_at = ${now}
            WHERE model = ${model} AND id = ${id} AND consumed_at IS NULL`
        })
      )
    }

    destroy(id: string) {
      const model = this.model
      return run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`DELETE FROM oauth_records WHERE model = ${model} AND id = ${id}`
        })
      )
    }

    revokeByGrantId(grantId: string) {
      return run(revokeGrant(grantId))
    }
  }

/** Every grant of one account to one client, with its codes and tokens, is deleted: they stop at once. */
export const revokeApp = (accountId: string, clientId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`DELETE FROM oauth_records WHERE account_id = ${accountId} AND client_id = ${clientId}
      AND model <> 'Session'`
  })

/** Every record of a grant (the grant itself, its codes and tokens) is deleted: they stop at once. */
export const revokeGrant = (grantId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`DELETE FROM oauth_records WHERE grant_id = ${grantId} OR (model = 'Grant' AND id = ${grantId})`
  })

/** A client an account connected: its registration stays (it no longer expires unused). */
export const adoptClient = (clientId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE oauth_records SET expires_at = NULL
      WHERE ((model = 'Client' AND id = ${clientId}) OR (model = 'RegistrationAccessToken' AND client_id = ${clientId}))
        AND expires_at IS NOT NULL`
  })

/**
 * Forgets records past their expiry (every model: interactions, sessions, codes, tokens, grants,
 * replay records, and registrations no account connected in time); returns how many.
 */
export const sweepExpired = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const now = yield* libraryNow
  const rows =
    yield* sql`DELETE FROM oauth_records WHERE expires_at IS NOT NULL AND expires_at <= ${now} RETURNING id`
  return rows.length
})
