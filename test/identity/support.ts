import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Reply, TestApp } from "../support/app.ts"

/** The newest outbox message to `email` (the embedded default's delivery channel). */
export const latestMail = (email: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ subject: string; body_text: string | null; kind: string }>`
      SELECT subject, body_text, kind FROM outbox WHERE to_email = ${email} ORDER BY created_at DESC, id DESC LIMIT 1`
    const row = rows[0]
    if (row === undefined) throw new Error(`no mail to ${email}`)
    return { subject: row.subject, text: row.body_text ?? "", kind: row.kind }
  }).pipe(Effect.orDie)

export const codeIn = (text: string) => {
  const match = /code is (\d{6})/.exec(text)
  if (match === null) throw new Error(`no code in: ${text}`)
  return match[1]!
}

export const linkTokenIn = (text: string, path: string) => {
  const match = new RegExp(`${path}\\?token=([0-9A-Za-z]{43})`).exec(text)
  if (match === null) throw new Error(`no ${path} link in: ${text}`)
  return match[1]!
}

export const post = (
  app: TestApp["Service"],
  path: string,
  body: unknown,
  options: { key?: string; ip?: string } = {}
) =>
  app.call(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    ...options
  })

/** Email sign-in from start to management token; `key` makes it a claim. */
export const signIn = (app: TestApp["Service"], email: string, options: { key?: string; ip?: string } = {}) =>
  Effect.gen(function* () {
    const started = yield* post(app, "/v1/auth/email/start", { email }, options)
    if (started.status !== 202) throw new Error(`start: ${started.status} ${JSON.stringify(started.body)}`)
    const mail = yield* latestMail(email.trim().toLowerCase())
    const verified: Reply = yield* post(
      app,
      "/v1/auth/email/verify",
      { email, code: codeIn(mail.text) },
      options
    )
    if (verified.status !== 200)
      throw new Error(`verify: ${verified.status} ${JSON.stringify(verified.body)}`)
    return verified.body as {
      management_token: string
      token_id: string
      expires_at: string
      email: string
      accounts: Array<{ account_id: string; plan: string; balance_credits: number; grant_credits: number }>
      claimed: string | null
      grant_credits: number
    }
  })

/** Every outbox message to `email`, oldest first. */
export const mailTo = (email: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ subject: string; body_text: string | null; kind: string }>`
      SELECT subject, body_text, kind FROM outbox WHERE to_email = ${email} ORDER BY created_at, id`
    return rows.map((row) => ({ subject: row.subject, text: row.body_text ?? "", kind: row.kind }))
  }).pipe(Effect.orDie)

/** How many outbox messages of `kind` went to `email`. */
export const mailCount = (email: string, kind: string) =>
  Effect.map(mailTo(email), (mails) => mails.filter((mail) => mail.kind === kind).length)

export const get = (app: TestApp["Service"], path: string, options: { key?: string; ip?: string } = {}) =>
  app.call(path, options)

/** A body that is not JSON, sent as JSON. */
export const postRaw = (
  app: TestApp["Service"],
  path: string,
  body: string,
  options: { key?: string; ip?: string } = {}
) => app.call(path, { method: "POST", headers: { "content-type": "application/json" }, body, ...options })

/** One metered test call of `cost` credits (testEcho). */
export const spend = (
  app: TestApp["Service"],
  key: string,
  ip: string,
  cost: number,
  extra: { idempotencyKey?: string } = {}
) =>
  app.call(`/v1/profnet/test-echo?value=v&cost=${cost}`, {
    key,
    ip,
    // Paid plans require an Idempotency-Key; a fresh one per call.
    idempotencyKey: extra.idempotencyKey ?? crypto.randomUUID()
  })

/** Starts a sign-in and returns the code from its email. */
export const codeFor = (
  app: TestApp["Service"],
  email: string,
  options: { key?: string; ip?: string } = {}
) =>
  Effect.gen(function* () {
    const started = yield* post(app, "/v1/auth/email/start", { email }, options)
    if (started.status !== 202) throw new Error(`start: ${started.status} ${JSON.stringify(started.body)}`)
    const mail = yield* latestMail(email.trim().toLowerCase())
    return { code: codeIn(mail.text), token: linkTokenIn(mail.text, "/login") }
  })

/** An account's money and grant facts, straight from the store. */
export const accountRow = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{
      plan: string
      email: string | null
      balance_credits: number | bigint
      grant_credits: number | bigint
      claimed_at: number | bigint | null
    }>`SELECT plan, email, balance_credits, grant_credits, claimed_at FROM accounts WHERE id = ${accountId}`
    const row = rows[0]
    if (row === undefined) throw new Error(`no account ${accountId}`)
    return {
      plan: row.plan,
      email: row.email,
      balance: Number(row.balance_credits),
      grant: Number(row.grant_credits),
      claimed: row.claimed_at !== null
    }
  }).pipe(Effect.orDie)

/** The grants table and the grant credit events, for the once-per-email-and-key checks. */
export const grantFacts = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const grants = yield* sql<{ account_id: string; email: string; key_id: string; credits: number | bigint }>`
    SELECT account_id, email, key_id, credits FROM grants ORDER BY created_at, key_id`
  const events = yield* sql<{ account_id: string; credits: number | bigint }>`
    SELECT account_id, credits FROM credit_events WHERE kind = 'grant' ORDER BY created_at, id`
  return {
    grants: grants.map((row) => ({ ...row, credits: Number(row.credits) })),
    events: events.map((row) => ({ account_id: row.account_id, credits: Number(row.credits) }))
  }
}).pipe(Effect.orDie)
