import { timingSafeEqual } from "node:crypto"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import { InvalidInput, RateLimited, Unauthorized } from "../contract/errors.ts"
import type { Account, Governor } from "../domain/accounts.ts"
import { windowWords } from "../domain/policy.ts"
import { hashSecret } from "../domain/secrets.ts"
import {
  hashCode,
  identityPolicy,
  linkTokenPattern,
  makeLinkToken,
  makeSignInCode,
  makeUserCode,
  normalizeEmail,
  normalizeUserCode,
  signInCodePattern,
  startWindows
} from "../domain/signIn.ts"
import * as Row from "../store/rows.ts"
import { Accounts, toAccount } from "./Accounts.ts"
import { Audit } from "./Audit.ts"
import { Credits } from "./Credits.ts"
import { Ids } from "./Ids.ts"
import { KeyMemory } from "./KeyMemory.ts"
import { ManagementTokens, type TokenLabel } from "./ManagementTokens.ts"
import { signInMail } from "./mail/messages.ts"
import { Outbox } from "./mail/Outbox.ts"
import { RateLimits } from "./RateLimits.ts"

export type { Governor, TokenLabel }

/** An account as a sign-in lists it. */
export interface AccountSummary {
  readonly account_id: string
  readonly plan: Account["plan"]
  readonly claimed_at: string | null
  readonly balance_credits: number
  readonly grant_credits: number
}

/** The answer of every completed sign-in (email code or link, device flow, browser callback). */
export interface SignedIn {
  readonly management_token: string
  readonly token_id: string
  readonly expires_at: string
  readonly email: string
  readonly accounts: ReadonlyArray<AccountSummary>
  readonly claimed: string | null
  readonly grant_credits: number
}

/** RFC 8628 3.5 answers of a device token request that is not (yet) a token. */
export type DevicePending =
  | "authorization_pending"
  | "slow_down"
  | "access_denied"
  | "expired_token"
  | "invalid_grant"

export interface DeviceStart {
  readonly device_code: string
  readonly user_code: string
  readonly verification_uri: string
  readonly verification_uri_complete: string
  readonly expires_in: number
  readonly interval: number
}

const SignInRow = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  code_hash: Schema.String,
  key_id: Schema.NullOr(Schema.String),
  attempts: Row.Int,
  start_ip: Schema.NullOr(Schema.String),
  expires_at: Row.Int,
  used_at: Row.NullableInt
})
const ClaimRow = Schema.Struct({
  key_id: Schema.String,
  revoked_at: Row.NullableInt,
  account_id: Schema.String,
  claimed_at: Row.NullableInt,
  email: Schema.NullOr(Schema.String),
  state: Schema.String
})
const DeviceRow = Schema.Struct({
  id: Schema.String,
  user_code: Schema.String,
  state: Schema.Literals(["pending", "approved", "denied", "used"]),
  email: Schema.NullOr(Schema.String),
  interval_ms: Row.Int,
  last_poll_at: Row.NullableInt,
  expires_at: Row.Int
})
const LinkRow = Schema.Struct({
  email: Schema.optional(Schema.String),
  account_id: Schema.optional(Schema.String),
  expires_at: Row.Int,
  used_at: Row.NullableInt
})

const decodeSignIns = Row.decoder(SignInRow, "sign_ins")
const decodeClaims = Row.decoder(ClaimRow, "api_keys joined with accounts (claim)")
const decodeDevices = Row.decoder(DeviceRow, "device_codes")
const decodeLinks = Row.decoder(LinkRow, "single-use link")

const iso = (ms: number) => new Date(ms).toISOString()

/** The key a sign-in claims with: the one it was started with, and only when the verifier holds it too. */
const claimingKey = (startedWith: string | null, heldNow: string | undefined) =>
  startedWith !== null && startedWith === heldNow ? startedWith : null

const sameHash = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

export const badEmail = () =>
  new InvalidInput({ message: "`email` must be an email address, like name@example.com.", param: "email" })

const summary = (account: Account, claimedAt: number | null): AccountSummary => ({
  account_id: account.id,
  plan: account.plan,
  claimed_at: claimedAt === null ? null : iso(claimedAt),
  balance_credits: account.balanceCredits,
  grant_credits: account.grantCredits
})

/**
 * Sign-in: proving an email (emailed codes and links, the device flow, the loopback callback's
 * exchange codes), and what a completed sign-in does: the identity exists, a key that started it
 * claims its account (and earns the one-time grant), and a management token is issued. Every
 * secret is random, answered once and stored as a hash; every change and the mail it causes commit
 * in one transaction.
 */
export class SignIn extends Context.Service<
  SignIn,
  {
    readonly start: (input: {
      readonly email: string
      readonly ip: string
      readonly keyId: string | undefined
    }) => Effect.Effect<
      { readonly sent: true; readonly expires_in: number },
      InvalidInput | RateLimited | SqlError
    >
    /**
     * Signs in with an emailed code. `ip` is the client's per-IP key (its wrong tries are counted);
     * `keyId` the spend key the client holds now: a sign-in started with a key claims its account
     * only when verified with the same key.
     */
    readonly verifyCode: (input: {
      readonly email: string
      readonly code: string
      readonly ip: string
      readonly keyId: string | undefined
      readonly label: TokenLabel
    }) => Effect.Effect<SignedIn, InvalidInput | Unauthorized | RateLimited | SqlError>
    /** Signs in with an emailed link; `keyId` as for `verifyCode`. */
    readonly verifyLink: (input: {
      readonly token: string
      readonly keyId: string | undefined
      readonly label: TokenLabel
    }) => Effect.Effect<SignedIn, Unauthorized | SqlError>
    /** Whom a live sign-in link signs in, and whether it was started to claim (for the page that asks first). */
    readonly linkTarget: (
      token: string
    ) => Effect.Effect<{ readonly email: string; readonly claiming: boolean } | undefined, SqlError>
    readonly startDevice: (ip: string) => Effect.Effect<DeviceStart, RateLimited | SqlError>
    readonly pollDevice: (
      deviceCode: string
    ) => Effect.Effect<SignedIn | { readonly error: DevicePending }, SqlError>
    /** A signed-in person approves (or denies) a user code; INVALID_INPUT for an unknown or finished code. */
    readonly decideDevice: (
      governor: Governor,
      userCode: string,
      approve: boolean
    ) => Effect.Effect<{ readonly user_code: string; readonly approved: boolean }, InvalidInput | SqlError>
    /** A single-use code for the loopback browser callback. */
    readonly exchangeCode: (governor: Governor) => Effect.Effect<string, SqlError>
    readonly exchange: (code: string) => Effect.Effect<SignedIn, Unauthorized | SqlError>
  }
>()("services/SignIn") {
  static readonly layer = Layer.effect(
    SignIn,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const keyMemory = yield* KeyMemory
      const ids = yield* Ids
      const credits = yield* Credits
      const accounts = yield* Accounts
      const managementTokens = yield* ManagementTokens
      const outbox = yield* Outbox
      const limits = yield* RateLimits
      const audit = yield* Audit
      const { baseUrl, policy } = yield* AppConfig
      const signInLimits = policy.signIn

      const newSecret = Effect.map(ids.secretBytes, makeLinkToken)

      /**
       * Starts and code tries for one email take turns (two starts at once would each miss the
       * other's new row; two tries at once would each read the other's count before it was written).
       */
      const lockEmail = (email: string) => sql`SELECT pg_advisory_xact_lock(hashtext(${`sign-in:${email}`}))`

      /**
       * The end of every sign-in, inside its transaction: the identity exists, a key that started
       * the sign-in claims its unclaimed account (and earns the grant once), a new identity without
       * an account gets a trial account, and a management token is issued. A child key is never a
       * claimant: it claims nothing and earns nothing (the surfaces send none; this holds anyway).
       */
      const complete = (email: string, keyId: string | null, label: TokenLabel, now: number) =>
        Effect.gen(function* () {
          yield* sql`INSERT INTO identities (email, created_at) VALUES (${email}, ${now}) ON CONFLICT DO NOTHING`
          let claimed: string | null = null
          let granted = 0
          if (keyId !== null) {
            const rows =
              yield* sql`SELECT k.id AS key_id, k.revoked_at, a.id AS account_id, a.claimed_at, a.email, a.state
              FROM api_keys k JOIN accounts a ON a.id = k.account_id
              WHERE k.id = ${keyId} AND k.parent_key_id IS NULL FOR UPDATE OF a`.pipe(
                Effect.flatMap(decodeClaims)
              )
            const key = rows[0]
            if (key !== undefined && key.revoked_at === null && key.state === "active") {
              if (key.claimed_at === null) {
                yield* keyMemory.changing(key.account_id)
                const won = yield* sql`UPDATE accounts SET email = ${email}, claimed_at = ${now}
                  WHERE id = ${key.account_id} AND claimed_at IS NULL RETURNING id`
                if (won.length > 0) claimed = key.account_id
              }
              if (claimed !== null || key.email === email) {
                granted = yield* credits.grantOnce({ accountId: key.account_id, email, keyId })
              }
            }
          }
          let owned = yield* accounts.ofEmail(email)
          if (owned.length === 0) {
            const accountId = yield* ids.newId("acct")
            yield* sql`INSERT INTO accounts (id, plan, email, claimed_at, created_at)
              VALUES (${accountId}, 'trial', ${email}, ${now}, ${now})`
            owned = yield* accounts.ofEmail(email)
          }
          const token = yield* managementTokens.issue(email, label, now)
          yield* Effect.forEach(
            owned,
            (row) => audit.record(row.id, "signed_in", token.tokenId, { kind: "email", id: email }),
            { discard: true }
          )
          return {
            management_token: token.secret,
            token_id: token.tokenId,
            expires_at: iso(token.expiresAt),
            email,
            accounts: owned.map((row) => summary(toAccount(row), row.claimed_at)),
            claimed,
            grant_credits: granted
          } satisfies SignedIn
        })

      const start = Effect.fn("SignIn.start")(function* (input: {
        readonly email: string
        readonly ip: string
        readonly keyId: string | undefined
      }) {
        const email = normalizeEmail(input.email)
        if (email === undefined) return yield* badEmail()
        yield* limits.takeAll(startWindows("signin", signInLimits, email, input.ip), "sign-in")
        const now = yield* Clock.currentTimeMillis
        const id = yield* ids.newId("signin")
        const code = makeSignInCode()
        const link = yield* newSecret
        // The same statements for a known and an unknown email: the answer and its timing say nothing.
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* lockEmail(email)
            // A new start replaces this client's earlier code, never another client's: a stranger's
            // start cannot take the owner's live code away.
            yield* sql`UPDATE sign_ins SET used_at = ${now}
              WHERE email = ${email} AND start_ip = ${input.ip} AND used_at IS NULL`
            yield* sql`INSERT INTO sign_ins (id, email, code_hash, link_hash, key_id, start_ip, expires_at, created_at)
              VALUES (${id}, ${email}, ${hashCode(id, code)}, ${hashSecret(link)}, ${input.keyId ?? null},
                ${input.ip}, ${now + identityPolicy.signInTtlMs}, ${now})`
            yield* outbox.enqueue(
              signInMail({
                to: email,
                code,
                link: `${baseUrl}/login?token=${link}`,
                minutes: identityPolicy.signInTtlMs / 60_000,
                claiming: input.keyId !== undefined
              })
            )
          })
        )
        return { sent: true as const, expires_in: identityPolicy.signInTtlMs / 1000 }
      })

      const refused = () =>
        new Unauthorized({
          message: `This code is wrong, used or expired (a code works once, for 10 minutes, and takes ${signInLimits.wrongTriesPerCodeIp} wrong tries from one address). Start again: POST /v1/auth/email/start, or use the link in the email.`,
          param: "code"
        })

      const verifyCode = Effect.fn("SignIn.verifyCode")(function* (input: {
        readonly email: string
        readonly code: string
        readonly ip: string
        readonly keyId: string | undefined
        readonly label: TokenLabel
      }) {
        const email = normalizeEmail(input.email)
        if (email === undefined) return yield* badEmail()
        if (!signInCodePattern.test(input.code))
          return yield* new InvalidInput({
            message: "`code` is the 6-digit code from the email.",
            param: "code"
          })
        // Each try takes one of the client's wrong codes (across all emails); a right one gives it back.
        const { wrongCodesPerIp, wrongTriesPerCodeIp, wrongTriesPerCodeOthers } = signInLimits
        const allowance = yield* limits.take({
          key: `signin-wrong-ip:${input.ip}`,
          limit: wrongCodesPerIp.limit,
          window: wrongCodesPerIp.windowMs
        })
        if (!allowance.allowed)
          return yield* new RateLimited({
            message: `Too many wrong sign-in codes from this address; at most ${wrongCodesPerIp.limit} per ${windowWords(wrongCodesPerIp.windowMs)}. Retry after retry_after_seconds, or use the link in the email.`,
            retry_after_seconds: allowance.retryAfterSeconds
          })
        const now = yield* Clock.currentTimeMillis
        // A wrong try is counted (and committed) even though the answer is a refusal.
        const outcome = yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* lockEmail(email)
            // The codes this client may still try: live, short of its own wrong tries, and short of
            // the other clients' total unless this client started it (so a stranger's wrong tries
            // never kill a code for the client that asked for it).
            const live = yield* sql`SELECT s.id, s.email, s.code_hash, s.key_id, s.attempts, s.start_ip,
                s.expires_at, s.used_at
              FROM sign_ins s LEFT JOIN sign_in_attempts a ON a.sign_in_id = s.id AND a.ip = ${input.ip}
              WHERE s.email = ${email} AND s.used_at IS NULL AND s.expires_at > ${now}
                AND COALESCE(a.wrong, 0) < ${wrongTriesPerCodeIp}
                AND (s.start_ip = ${input.ip} OR s.attempts < ${wrongTriesPerCodeOthers})
              ORDER BY s.created_at DESC`.pipe(Effect.flatMap(decodeSignIns))
            const signIn = live.find((row) => sameHash(hashCode(row.id, input.code), row.code_hash))
            if (signIn === undefined) {
              for (const row of live) {
                yield* sql`INSERT INTO sign_in_attempts (sign_in_id, ip, wrong) VALUES (${row.id}, ${input.ip}, 1)
                  ON CONFLICT (sign_in_id, ip) DO UPDATE SET wrong = sign_in_attempts.wrong + 1`
                if (row.start_ip !== input.ip)
                  yield* sql`UPDATE sign_ins SET attempts = attempts + 1 WHERE id = ${row.id}`
              }
              return undefined
            }
            const used = yield* sql`UPDATE sign_ins SET used_at = ${now}
              WHERE id = ${signIn.id} AND used_at IS NULL RETURNING id`
            // Its link was followed in the meantime: the code is used.
            if (used.length === 0) return undefined
            return yield* complete(email, claimingKey(signIn.key_id, input.keyId), input.label, now)
          })
        )
        if (outcome === undefined) return yield* refused()
        yield* allowance.giveBack
        return outcome
      })

      const verifyLink = Effect.fn("SignIn.verifyLink")(function* (input: {
        readonly token: string
        readonly keyId: string | undefined
        readonly label: TokenLabel
      }) {
        const unusable = new Unauthorized({
          message: "This sign-in link is wrong, used or expired. Start again: POST /v1/auth/email/start.",
          param: "token"
        })
        if (!linkTokenPattern.test(input.token)) return yield* unusable
        const now = yield* Clock.currentTimeMillis
        // No try is counted against a link (it cannot be guessed), so wrong codes never stop it.
        const outcome = yield* sql.withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql`UPDATE sign_ins SET used_at = ${now}
              WHERE link_hash = ${hashSecret(input.token)} AND used_at IS NULL AND expires_at > ${now}
              RETURNING id, email, code_hash, key_id, attempts, start_ip, expires_at, used_at`.pipe(
              Effect.flatMap(decodeSignIns)
            )
            const signIn = rows[0]
            return signIn === undefined
              ? undefined
              : yield* complete(signIn.email, claimingKey(signIn.key_id, input.keyId), input.label, now)
          })
        )
        return outcome ?? (yield* unusable)
      })

      const linkTarget = Effect.fn("SignIn.linkTarget")(function* (token: string) {
        if (!linkTokenPattern.test(token)) return undefined
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql<{ email: string; key_id: string | null }>`SELECT email, key_id FROM sign_ins
          WHERE link_hash = ${hashSecret(token)} AND used_at IS NULL AND expires_at > ${now}`
        const row = rows[0]
        return row === undefined ? undefined : { email: row.email, claiming: row.key_id !== null }
      })

      const startDevice = Effect.fn("SignIn.startDevice")(function* (ip: string) {
        yield* limits.takeAll(
          [{ key: `device-ip:${ip}`, rule: { limit: 10, windowMs: 15 * 60_000 } }],
          "device sign-in"
        )
        const now = yield* Clock.currentTimeMillis
        const id = yield* ids.newId("dev")
        const deviceCode = yield* newSecret
        const userCode = makeUserCode()
        yield* sql`INSERT INTO device_codes (id, device_hash, user_code, state, interval_ms, expires_at, created_at)
          VALUES (${id}, ${hashSecret(deviceCode)}, ${userCode}, 'pending', ${identityPolicy.deviceIntervalMs},
            ${now + identityPolicy.deviceTtlMs}, ${now})`
        return {
          device_code: deviceCode,
          user_code: userCode,
          verification_uri: `${baseUrl}/activate`,
          verification_uri_complete: `${baseUrl}/activate?user_code=${userCode}`,
          expires_in: identityPolicy.deviceTtlMs / 1000,
          interval: identityPolicy.deviceIntervalMs / 1000
        } satisfies DeviceStart
      })

      const pollDevice = Effect.fn("SignIn.pollDevice")(function* (deviceCode: string) {
        const now = yield* Clock.currentTimeMillis
        const pending = (error: DevicePending) => ({ error })
        if (!linkTokenPattern.test(deviceCode)) return pending("invalid_grant")
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql`SELECT id, user_code, state, email, interval_ms, last_poll_at, expires_at
              FROM device_codes WHERE device_hash = ${hashSecret(deviceCode)} FOR UPDATE`.pipe(
              Effect.flatMap(decodeDevices)
            )
            const device = rows[0]
            if (device === undefined || device.state === "used") return pending("invalid_grant")
            if (device.expires_at <= now) return pending("expired_token")
            if (device.state === "denied") return pending("access_denied")
            if (device.last_poll_at !== null && now - device.last_poll_at < device.interval_ms) {
              yield* sql`UPDATE device_codes SET last_poll_at = ${now},
                interval_ms = interval_ms + ${identityPolicy.deviceSlowDownMs} WHERE id = ${device.id}`
              return pending("slow_down")
            }
            if (device.state === "pending" || device.email === null) {
              yield* sql`UPDATE device_codes SET last_poll_at = ${now} WHERE id = ${device.id}`
              return pending("authorization_pending")
            }
            yield* sql`UPDATE device_codes SET state = 'used', last_poll_at = ${now} WHERE id = ${device.id}`
            return yield* complete(device.email, null, "device", now)
          })
        )
      })

      const decideDevice = Effect.fn("SignIn.decideDevice")(function* (
        governor: Governor,
        input: string,
        approve: boolean
      ) {
        const unknown = new InvalidInput({
          message: "No pending sign-in has this code (it is 8 letters like BCDF-GHJK, valid 10 minutes).",
          param: "user_code"
        })
        const userCode = normalizeUserCode(input)
        if (userCode === undefined) return yield* unknown
        const now = yield* Clock.currentTimeMillis
        const decided = yield* sql`UPDATE device_codes SET state = ${approve ? "approved" : "denied"},
            email = ${approve ? governor.email : null}
          WHERE user_code = ${userCode} AND state = 'pending' AND expires_at > ${now} RETURNING id`
        if (decided.length === 0) return yield* unknown
        return { user_code: userCode, approved: approve }
      })

      const exchangeCode = Effect.fn("SignIn.exchangeCode")(function* (governor: Governor) {
        const now = yield* Clock.currentTimeMillis
        const code = yield* newSecret
        yield* sql`INSERT INTO exchange_codes (code_hash, email, expires_at, created_at)
          VALUES (${hashSecret(code)}, ${governor.email}, ${now + identityPolicy.exchangeTtlMs}, ${now})`
        return code
      })

      const exchange = Effect.fn("SignIn.exchange")(function* (code: string) {
        const unusable = new Unauthorized({
          message: "This code is wrong, used or expired (it works once, for 5 minutes). Sign in again.",
          param: "code"
        })
        if (!linkTokenPattern.test(code)) return yield* unusable
        const now = yield* Clock.currentTimeMillis
        const outcome = yield* sql.withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql`UPDATE exchange_codes SET used_at = ${now}
              WHERE code_hash = ${hashSecret(code)} AND used_at IS NULL AND expires_at > ${now}
              RETURNING email, expires_at, used_at`.pipe(Effect.flatMap(decodeLinks))
            const email = rows[0]?.email
            return email === undefined ? undefined : yield* complete(email, null, "cli", now)
          })
        )
        return outcome ?? (yield* unusable)
      })

      return SignIn.of({
        start,
        verifyCode,
        verifyLink,
        linkTarget,
        startDevice,
        pollDevice,
        decideDevice,
        exchangeCode,
        exchange
      })
    })
  )
}
