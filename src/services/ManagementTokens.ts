import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { NotFound, Unauthorized } from "../contract/errors.ts"
import type { Governor } from "../domain/accounts.ts"
import { encodeBase62, hashSecret, hintOf, managementTokenPattern } from "../domain/secrets.ts"
import { identityPolicy } from "../domain/signIn.ts"
import * as Row from "../store/rows.ts"
import { Accounts, toAccount } from "./Accounts.ts"
import { Audit } from "./Audit.ts"
import { Ids } from "./Ids.ts"

export type { Governor }

export type TokenLabel = "web" | "cli" | "device"

export interface TokenListing {
  readonly token_id: string
  readonly label: TokenLabel
  readonly created_at: string
  readonly last_used_at: string | null
  readonly expires_at: string
  readonly current: boolean
}

/** A token just issued: its secret, in this answer only. */
export interface IssuedToken {
  readonly tokenId: string
  readonly secret: string
  readonly expiresAt: number
}

const TokenRow = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  label: Schema.Literals(["web", "cli", "device"]),
  created_at: Row.Int,
  last_used_at: Row.NullableInt,
  expires_at: Row.Int,
  revoked_at: Row.NullableInt
})
const decodeTokens = Row.decoder(TokenRow, "management_tokens")

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * `svcm_` management tokens: issued by every completed sign-in (90 days), the identity behind one,
 * and an identity's own list and revocation. Secrets are stored as hashes only.
 */
export class ManagementTokens extends Context.Service<
  ManagementTokens,
  {
    /** A new token for an email; joins the caller's transaction (the sign-in's). */
    readonly issue: (email: string, label: TokenLabel, now: number) => Effect.Effect<IssuedToken, SqlError>
    readonly authenticate: (secret: string) => Effect.Effect<Governor, Unauthorized | SqlError>
    readonly list: (governor: Governor) => Effect.Effect<ReadonlyArray<TokenListing>, SqlError>
    readonly revoke: (
      governor: Governor,
      tokenId: string
    ) => Effect.Effect<{ readonly token_id: string; readonly revoked_at: string }, NotFound | SqlError>
  }
>()("services/ManagementTokens") {
  static readonly layer = Layer.effect(
    ManagementTokens,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const ids = yield* Ids
      const accounts = yield* Accounts
      const audit = yield* Audit

      const issue = (email: string, label: TokenLabel, now: number) =>
        Effect.gen(function* () {
          const tokenId = yield* ids.newId("mtok")
          const secret = `svcm_${encodeBase62(yield* ids.secretBytes).slice(0, 32)}`
          const expiresAt = now + identityPolicy.managementTokenTtlMs
          yield* sql`INSERT INTO management_tokens (id, email, secret_hash, label, created_at, expires_at)
            VALUES (${tokenId}, ${email}, ${hashSecret(secret)}, ${label}, ${now}, ${expiresAt})`
          return { tokenId, secret, expiresAt } satisfies IssuedToken
        })

      const authenticate = Effect.fn("ManagementTokens.authenticate")(function* (secret: string) {
        const inactive = new Unauthorized({
          message:
            "This management token is not active (unknown, revoked or past its 90 days). Sign in again: POST /v1/auth/email/start."
        })
        if (!managementTokenPattern.test(secret)) return yield* inactive
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql`SELECT id, email, label, created_at, last_used_at, expires_at, revoked_at
          FROM management_tokens WHERE secret_hash = ${hashSecret(secret)}`.pipe(Effect.flatMap(decodeTokens))
        const token = rows[0]
        if (token === undefined || token.revoked_at !== null || token.expires_at <= now)
          return yield* inactive
        if (token.last_used_at === null || now - token.last_used_at >= identityPolicy.lastUsedResolutionMs) {
          yield* sql`UPDATE management_tokens SET last_used_at = ${now} WHERE id = ${token.id}`
        }
        const owned = yield* accounts.ofEmail(token.email)
        return {
          tokenId: token.id,
          hint: hintOf(secret),
          email: token.email,
          accounts: owned.map(toAccount)
        } satisfies Governor
      })

      const list = Effect.fn("ManagementTokens.list")(function* (governor: Governor) {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql`SELECT id, email, label, created_at, last_used_at, expires_at, revoked_at
          FROM management_tokens WHERE email = ${governor.email} AND revoked_at IS NULL AND expires_at > ${now}
          ORDER BY created_at, id`.pipe(Effect.flatMap(decodeTokens))
        return rows.map(
          (row): TokenListing => ({
            token_id: row.id,
            label: row.label,
            created_at: iso(row.created_at),
            last_used_at: row.last_used_at === null ? null : iso(row.last_used_at),
            expires_at: iso(row.expires_at),
            current: row.id === governor.tokenId
          })
        )
      })

      const revoke = Effect.fn("ManagementTokens.revoke")(function* (governor: Governor, tokenId: string) {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql`SELECT id, email, label, created_at, last_used_at, expires_at, revoked_at
          FROM management_tokens WHERE id = ${tokenId} AND email = ${governor.email}`.pipe(
          Effect.flatMap(decodeTokens)
        )
        const token = rows[0]
        if (token === undefined)
          return yield* new NotFound({
            message: `No management token ${tokenId} for this sign-in. List them with GET /v1/auth/tokens.`,
            param: "token_id"
          })
        if (token.revoked_at !== null) return { token_id: tokenId, revoked_at: iso(token.revoked_at) }
        yield* sql.withTransaction(
          Effect.andThen(
            sql`UPDATE management_tokens SET revoked_at = ${now} WHERE id = ${tokenId} AND revoked_at IS NULL`,
            Effect.forEach(
              governor.accounts,
              (account) =>
                audit.record(account.id, "token.revoked", tokenId, { kind: "email", id: governor.email }),
              { discard: true }
            )
          )
        )
        return { token_id: tokenId, revoked_at: iso(now) }
      })

      return ManagementTokens.of({ issue, authenticate, list, revoke })
    })
  )
}
