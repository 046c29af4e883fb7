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
      email: string
      accounts: Array<{ account_id: string; plan: string; balance_credits: number; grant_credits: number }>
      claimed: string | null
      grant_credits: number
    }
  })
