import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig, links } from "../config.ts"
import { type InvalidInput, type RateLimited, Unauthorized } from "../contract/errors.ts"
import { hashSecret } from "../domain/secrets.ts"
import {
  identityPolicy,
  linkTokenPattern,
  makeLinkToken,
  normalizeEmail,
  startWindows
} from "../domain/signIn.ts"
import * as Row from "../store/rows.ts"
import { Accounts } from "./Accounts.ts"
import { Audit } from "./Audit.ts"
import { Ids } from "./Ids.ts"
import { type IssuedKey, Keys } from "./Keys.ts"
import { recoveryMail } from "./mail/messages.ts"
import { Outbox } from "./mail/Outbox.ts"
import { RateLimits } from "./RateLimits.ts"
import { badEmail } from "./SignIn.ts"

const decodeLinks = Row.decoder(
  Schema.Struct({ account_id: Schema.String, expires_at: Row.Int, used_at: Row.NullableInt }),
  "recovery_links"
)

/**
 * Recovery of a claimed account whose keys are lost: a single-use link per account mailed to its
 * owner (the same work for every address), and the re-key it opens (a new key, every other one
 * revoked; balance, plan and receipts unchanged).
 */
export class Recovery extends Context.Service<
  Recovery,
  {
    readonly start: (input: {
      readonly email: string
      readonly ip: string
    }) => Effect.Effect<{ readonly sent: true }, InvalidInput | RateLimited | SqlError>
    readonly rekey: (
      token: string
    ) => Effect.Effect<
      { readonly account_id: string; readonly revoked: number } & IssuedKey,
      Unauthorized | SqlError
    >
    /** The account of a live recovery link (for the page that asks before it re-keys). */
    readonly target: (token: string) => Effect.Effect<string | undefined, SqlError>
  }
>()("services/Recovery") {
  static readonly layer = Layer.effect(
    Recovery,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const ids = yield* Ids
      const keys = yield* Keys
      const accounts = yield* Accounts
      const audit = yield* Audit
      const outbox = yield* Outbox
      const limits = yield* RateLimits
      const { baseUrl, policy } = yield* AppConfig
      const newSecret = Effect.map(ids.secretBytes, makeLinkToken)

      const start = Effect.fn("Recovery.start")(function* (input: {
        readonly email: string
        readonly ip: string
      }) {
        const email = normalizeEmail(input.email)
        if (email === undefined) return yield* badEmail()
        yield* limits.takeAll(startWindows("recover", policy.recovery, email, input.ip), "recovery")
        const now = yield* Clock.currentTimeMillis
        yield* sql.withTransaction(
          Effect.gen(function* () {
            const claimed = yield* sql<{ id: string }>`SELECT id FROM accounts
              WHERE email = ${email} AND claimed_at IS NOT NULL ORDER BY created_at, id`
            const issued: Array<{ accountId: string; link: string; hash: string }> = []
            for (const account of claimed) {
              const link = yield* newSecret
              issued.push({ accountId: account.id, link, hash: hashSecret(link) })
            }
            // The same statements and one message whether or not the address owns an account (its
            // links are rows of one insert, none for an unknown address): the work, and so the
            // answer's timing, says nothing about who has an account.
            const rows = JSON.stringify(
              issued.map(({ accountId, hash }) => ({ account_id: accountId, link_hash: hash }))
            )
            yield* sql`INSERT INTO recovery_links (link_hash, account_id, expires_at, created_at)
              SELECT link_hash, account_id, ${now + identityPolicy.recoveryTtlMs}::bigint, ${now}::bigint
              FROM jsonb_to_recordset(${rows}::jsonb) AS issued (link_hash text, account_id text)`
            yield* outbox.enqueue(
              recoveryMail({
                to: email,
                links: issued.map(({ accountId, link }) => ({
                  accountId,
                  link: `${baseUrl}/recover?token=${link}`
                })),
                minutes: identityPolicy.recoveryTtlMs / 60_000,
                claimUrl: links(baseUrl).claim
              })
            )
          })
        )
        return { sent: true as const }
      })

      const liveRecovery = (token: string, now: number) =>
        sql`SELECT account_id, expires_at, used_at FROM recovery_links
          WHERE link_hash = ${hashSecret(token)} AND used_at IS NULL AND expires_at > ${now}`.pipe(
          Effect.flatMap(decodeLinks)
        )

      const target = Effect.fn("Recovery.target")(function* (token: string) {
        if (!linkTokenPattern.test(token)) return undefined
        const rows = yield* liveRecovery(token, yield* Clock.currentTimeMillis)
        return rows[0]?.account_id
      })

      const rekey = Effect.fn("Recovery.rekey")(function* (token: string) {
        const unusable = new Unauthorized({
          message:
            "This recovery link is wrong, used or expired (it works once, for one hour). Ask for a new one: POST /v1/recover.",
          param: "token"
        })
        if (!linkTokenPattern.test(token)) return yield* unusable
        const now = yield* Clock.currentTimeMillis
        const outcome = yield* sql.withTransaction(
          Effect.gen(function* () {
            const links = yield* sql`UPDATE recovery_links SET used_at = ${now}
              WHERE link_hash = ${hashSecret(token)} AND used_at IS NULL AND expires_at > ${now}
              RETURNING account_id, expires_at, used_at`.pipe(Effect.flatMap(decodeLinks))
            const accountId = links[0]?.account_id
            if (accountId === undefined) return yield* unusable
            const account = yield* accounts.lock(accountId)
            // A suspended account is not re-keyed; failing here rolls the link's use back too.
            if (account === undefined || account.state !== "active") return yield* unusable
            const revoked = yield* keys.revokeAll(accountId)
            const issued = yield* keys.issue({ accountId, plan: account.plan, label: "recovered" })
            // The link went to the account's email: whoever follows it acts as that owner.
            yield* audit.record(accountId, "account.rekeyed", issued.key_id, {
              kind: "email",
              id: account.email ?? accountId
            })
            return { account_id: accountId, ...issued, revoked }
          })
        )
        return outcome
      })

      return Recovery.of({ start, rekey, target })
    })
  )
}
