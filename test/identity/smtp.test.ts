import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { freePort, type Received, smtpServer } from "../mail/smtp.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { codeIn, linkTokenIn, post } from "./support.ts"

/**
 * Sign-in, claim and recovery with the mail delivered over SMTP: the service's Mailer (SMTP_URL,
 * read at start) sends to a real SMTP server in this test, and the code and links are read from
 * the messages it received (parsed with postal-mime), as a person reads them.
 */
const scope = Effect.runSync(Scope.make())
const port = await Effect.runPromise(freePort)
const sink = await Effect.runPromise(Scope.provide(smtpServer(port), scope))
process.env.SMTP_URL = `smtp://mailer:s3cret@127.0.0.1:${port}`
process.env.MAIL_FROM = "svc test <no-reply@svc.test>"
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

/** The first message to `to` received after `seen` messages, waiting (real time) for the Mailer. */
const mailTo = (to: string, seen: number) =>
  Effect.gen(function* () {
    for (let attempt = 0; attempt < 300; attempt++) {
      const found = sink.received.slice(seen).find((mail) => mail.to.includes(to))
      if (found !== undefined) return found
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
    }
    return yield* Effect.die(new Error(`no mail to ${to} arrived over SMTP`))
  })

const once = (to: string, subjectPart: string) =>
  sink.received.filter((mail: Received) => mail.to.includes(to) && (mail.subject ?? "").includes(subjectPart))
    .length

describe(`sign-in, claim and recovery by mail over SMTP (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("the code and the links arrive by SMTP, once each, and work", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.65.0.1"
        const email = "smtp-owner@example.com"
        const minted = yield* app.mint(ip)

        const before = sink.received.length
        const started = yield* post(app, "/v1/auth/email/start", { email }, { key: minted.key, ip })
        assert.strictEqual(started.status, 202)
        const signInMail = yield* mailTo(email, before)
        assert.strictEqual(signInMail.from, "no-reply@svc.test")
        assert.strictEqual(signInMail.user, "mailer")
        assert.match(signInMail.subject ?? "", /^Your sign-in code: \d{6}$/)
        assert.include(signInMail.html ?? "", "/login?token=")
        const verified = yield* post(
          app,
          "/v1/auth/email/verify",
          { email, code: codeIn(signInMail.text ?? "") },
          { key: minted.key, ip }
        )
        assert.strictEqual(verified.status, 200, JSON.stringify(verified.body))
        assert.strictEqual(verified.body.claimed, minted.account_id)
        assert.strictEqual(verified.body.grant_credits, 10_000)

        const beforeRecovery = sink.received.length
        assert.strictEqual((yield* post(app, "/v1/recover", { email }, { ip })).status, 202)
        const recoveryMail = yield* mailTo(email, beforeRecovery)
        const rekeyed = yield* post(app, "/v1/rekey", {
          token: linkTokenIn(recoveryMail.text ?? "", "/recover")
        })
        assert.strictEqual(rekeyed.status, 200, JSON.stringify(rekeyed.body))
        assert.strictEqual(rekeyed.body.account_id, minted.account_id)
        assert.strictEqual((yield* app.call("/v1/usage", { key: minted.key, ip })).status, 401)
        assert.strictEqual((yield* app.call("/v1/usage", { key: rekeyed.body.key, ip })).status, 200)

        // Delivered once each; the outbox keeps no body of a sent message.
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1500)))
        assert.strictEqual(once(email, "sign-in code"), 1)
        assert.strictEqual(once(email, "Recover account"), 1)
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ sent_at: unknown; body_text: string | null }>`
          SELECT sent_at, body_text FROM outbox WHERE to_email = ${email}`.pipe(Effect.orDie)
        assert.strictEqual(rows.length, 2)
        for (const row of rows) {
          assert.isNotNull(row.sent_at)
          assert.isNull(row.body_text)
        }
      })
    )
  })
})
