import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Logger } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { Ids } from "../../src/services/Ids.ts"
import { Mailer, retryDelayMs } from "../../src/services/mail/Mailer.ts"
import { alertMail, type Mail, signInMail } from "../../src/services/mail/messages.ts"
import { Outbox } from "../../src/services/mail/Outbox.ts"
import { realPause } from "../support/clock.ts"
import { freshDatabase, storeName } from "../support/database.ts"
import { freePort, smtpServer } from "./smtp.ts"

/** A migrated database of its own for each test, with the outbox. */
const Store = Outbox.layer.pipe(Layer.provideMerge(freshDatabase), Layer.provideMerge(Ids.layerTest))

const from = "svc <no-reply@svc.test>"
const urlOf = (port: number) => `smtp://mailer:s3cret@127.0.0.1:${port}`

interface OutboxRow {
  readonly id: string
  readonly subject: string
  readonly body_text: string | null
  readonly body_html: string | null
  readonly attempts: number
  readonly next_attempt_at: number
  readonly locked_until: number | null
  readonly last_error: string | null
  readonly sent_at: number | null
}

const outboxRows = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT id, subject, body_text, body_html, attempts, next_attempt_at, locked_until,
      last_error, sent_at FROM outbox ORDER BY id`
  return rows.map(
    (row): OutboxRow => ({
      ...(row as unknown as OutboxRow),
      attempts: Number(row.attempts),
      next_attempt_at: Number(row.next_attempt_at),
      locked_until: row.locked_until === null ? null : Number(row.locked_until),
      sent_at: row.sent_at === null ? null : Number(row.sent_at)
    })
  )
})

const enqueueAll = (mails: ReadonlyArray<Mail>) =>
  Effect.gen(function* () {
    const outbox = yield* Outbox
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(Effect.forEach(mails, outbox.enqueue))
  })

const signIn = (n: number) =>
  signInMail({
    to: `person${n}@example.test`,
    code: String(100_000 + n),
    link: `https://svc.test/sign-in/link-${n}`,
    minutes: 10,
    claiming: false
  })

describe(`mail delivery from the outbox (${storeName})`, () => {
  it.effect(
    "each message arrives once, with subject, text and HTML, and its bodies are cleared",
    () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const smtp = yield* smtpServer(port)
        const mails = [
          signIn(1),
          alertMail({
            to: "owner@example.test",
            accountId: "acct_1",
            threshold: 100,
            spendable: 40,
            upgradeUrl: "https://svc.test/upgrade"
          })
        ]
        yield* enqueueAll(mails)
        const mailer = yield* Mailer.make({ smtpUrl: urlOf(port), from })
        assert.strictEqual(yield* mailer.deliverDue, 2)
        assert.strictEqual(yield* mailer.deliverDue, 0)
        assert.strictEqual(smtp.received.length, 2)
        for (const mail of mails) {
          const got = smtp.received.filter((received) => received.subject === mail.subject)
          assert.strictEqual(got.length, 1, mail.subject)
          const [message] = got
          assert.deepStrictEqual(message!.to, [mail.to])
          assert.strictEqual(message!.from, "no-reply@svc.test")
          assert.strictEqual(message!.user, "mailer")
          assert.strictEqual(message!.text?.trim(), mail.text.trim())
          assert.include(message!.html, "<p>")
          assert.include(
            message!.html,
            mail.kind === "sign_in"
              ? 'href="https://svc.test/sign-in/link-1"'
              : 'href="https://svc.test/upgrade"'
          )
        }
        assert.include(smtp.received.find((m) => m.subject?.startsWith("Your sign-in"))!.text, "100001")
        for (const row of yield* outboxRows) {
          assert.isNull(row.body_text)
          assert.isNull(row.body_html)
          assert.strictEqual(row.sent_at, 0)
          assert.strictEqual(row.attempts, 0)
          assert.isNull(row.locked_until)
        }
      }).pipe(Effect.scoped, Effect.provide(Store)),
    60_000
  )

  it.effect(
    "SMTP down, then refusing, then back: every message arrives exactly once; attempts and backoff are recorded",
    () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const mails = [signIn(1), signIn(2), signIn(3)]
        yield* enqueueAll(mails)
        const mailer = yield* Mailer.make({ smtpUrl: urlOf(port), from })

        // Nothing listens: every message fails once and waits 2 s.
        assert.strictEqual(yield* mailer.deliverDue, 0)
        for (const row of yield* outboxRows) {
          assert.strictEqual(row.attempts, 1)
          assert.strictEqual(row.next_attempt_at, 2_000)
          assert.isNull(row.locked_until)
          assert.include(row.last_error, "ECONNREFUSED")
          assert.notInclude(row.last_error, "s3cret")
          assert.isNotNull(row.body_text)
        }
        // Not due yet: nothing is tried.
        assert.strictEqual(yield* mailer.deliverDue, 0)
        assert.deepStrictEqual(
          (yield* outboxRows).map((row) => row.attempts),
          [1, 1, 1]
        )
        yield* TestClock.adjust("2 seconds")
        assert.strictEqual(yield* mailer.deliverDue, 0)
        assert.deepStrictEqual(
          (yield* outboxRows).map((row) => [row.attempts, row.next_attempt_at]),
          [
            [2, 6_000],
            [2, 6_000],
            [2, 6_000]
          ]
        )

        // Listening, but answering 451 to every message.
        const smtp = yield* smtpServer(port)
        smtp.setRejecting(true)
        yield* TestClock.adjust("4 seconds")
        assert.strictEqual(yield* mailer.deliverDue, 0)
        for (const row of yield* outboxRows) {
          assert.strictEqual(row.attempts, 3)
          assert.strictEqual(row.next_attempt_at, 14_000)
          assert.include(row.last_error, "451")
        }
        assert.strictEqual(smtp.received.length, 0)

        smtp.setRejecting(false)
        yield* TestClock.adjust("7 seconds")
        assert.strictEqual(yield* mailer.deliverDue, 0)
        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* mailer.deliverDue, 3)
        assert.strictEqual(yield* mailer.deliverDue, 0)
        assert.sameMembers(
          smtp.received.map((message) => message.subject),
          mails.map((mail) => mail.subject)
        )
        for (const row of yield* outboxRows) {
          assert.strictEqual(row.attempts, 3)
          assert.strictEqual(row.sent_at, 14_000)
          assert.isNull(row.body_text)
          assert.isNull(row.body_html)
          assert.include(row.last_error, "451")
        }
      }).pipe(Effect.scoped, Effect.provide(Store)),
    60_000
  )

  it("the backoff doubles from 2 s and stops growing at 5 minutes", () => {
    assert.deepStrictEqual(
      [1, 2, 3, 4, 8, 9, 50].map(retryDelayMs),
      [2_000, 4_000, 8_000, 16_000, 256_000, 300_000, 300_000]
    )
  })

  it.effect(
    "two workers on one database never send one message twice; a held claim is taken over only once it lapses",
    () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const smtp = yield* smtpServer(port)
        const mails = Array.from({ length: 30 }, (_, n) => signIn(n + 1))
        yield* enqueueAll(mails)
        const a = yield* Mailer.make({ smtpUrl: urlOf(port), from })
        const b = yield* Mailer.make({ smtpUrl: urlOf(port), from })
        const counts = yield* Effect.all([a.deliverDue, b.deliverDue, a.deliverDue, b.deliverDue], {
          concurrency: "unbounded"
        })
        assert.strictEqual(
          counts.reduce((sum, n) => sum + n, 0),
          30
        )
        assert.strictEqual(smtp.received.length, 30)
        assert.strictEqual(new Set(smtp.received.map((message) => message.subject)).size, 30)

        // A worker that claimed a message and died: the others wait for its lease to lapse.
        const [id] = yield* enqueueAll([signIn(99)])
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE outbox SET locked_until = ${60_000} WHERE id = ${id!}`
        assert.strictEqual(yield* b.deliverDue, 0)
        yield* TestClock.adjust("59 seconds")
        assert.strictEqual(yield* a.deliverDue, 0)
        yield* TestClock.adjust("1 second")
        const after = yield* Effect.all([a.deliverDue, b.deliverDue], { concurrency: "unbounded" })
        assert.strictEqual(after[0] + after[1], 1)
        assert.strictEqual(smtp.received.length, 31)
        assert.strictEqual(smtp.received.filter((m) => m.subject === signIn(99).subject).length, 1)
      }).pipe(Effect.scoped, Effect.provide(Store)),
    60_000
  )

  it.live(
    "the worker layer polls the outbox and delivers new mail on its own",
    () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const smtp = yield* smtpServer(port)
        yield* Effect.gen(function* () {
          yield* enqueueAll([signIn(7)])
          for (let wait = 0; wait < 200 && smtp.received.length === 0; wait++) yield* realPause(25)
          assert.strictEqual(smtp.received.length, 1)
          yield* enqueueAll([signIn(8)])
          for (let wait = 0; wait < 200 && smtp.received.length === 1; wait++) yield* realPause(25)
          assert.deepStrictEqual(
            smtp.received.map((message) => message.subject),
            [signIn(7).subject, signIn(8).subject]
          )
          // The server counts a message before the worker hears its 250 and marks it sent.
          const delivered = (rows: ReadonlyArray<OutboxRow>) =>
            rows.every((row) => row.sent_at !== null && row.body_text === null)
          for (let wait = 0; wait < 200 && !delivered(yield* outboxRows); wait++) yield* realPause(25)
          assert.isTrue(delivered(yield* outboxRows))
        }).pipe(Effect.provide(Mailer.layerWith({ smtpUrl: urlOf(port), from, pollEvery: "50 millis" })))
      }).pipe(Effect.scoped, Effect.provide(Store)),
    60_000
  )

  it.effect(
    "without an SMTP URL nothing is sent: the message stays in the outbox with its bodies",
    () =>
      Effect.gen(function* () {
        yield* enqueueAll([signIn(5)])
        assert.strictEqual(yield* Mailer.deliverDue, 0)
        const [row] = yield* outboxRows
        assert.isNull(row!.sent_at)
        assert.strictEqual(row!.attempts, 0)
        assert.include(row!.body_text, "100005")
      }).pipe(
        Effect.provide(Mailer.layerWith({ smtpUrl: undefined, from })),
        Effect.scoped,
        Effect.provide(Store)
      ),
    60_000
  )

  it.live(
    "Mailer.layer reads SMTP_URL and MAIL_FROM; no log line holds a body, a code, a link or the password",
    () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const lines: Array<string> = []
        const capture = Logger.layer([Logger.make((options) => lines.push(Logger.formatJson.log(options)))])
        const configured = (env: Record<string, string>) =>
          Mailer.layer.pipe(
            Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))),
            Layer.provide(capture)
          )
        const env = { SMTP_URL: urlOf(port), MAIL_FROM: "Svc Mail <mail@svc.test>" }
        yield* enqueueAll([signIn(42)])
        // Down first: a failure is logged (and stored) without the password.
        yield* Effect.gen(function* () {
          for (let wait = 0; wait < 200; wait++) {
            if ((yield* outboxRows).every((row) => row.attempts > 0)) break
            yield* realPause(25)
          }
        }).pipe(Effect.provide(configured(env)), Effect.scoped)
        const smtp = yield* smtpServer(port)
        yield* Effect.gen(function* () {
          const mailer = yield* Mailer
          assert.isTrue(mailer.enabled)
          const sql = yield* SqlClient.SqlClient
          yield* sql`UPDATE outbox SET next_attempt_at = 0`
          for (let wait = 0; wait < 200; wait++) {
            if ((yield* outboxRows).every((row) => row.sent_at !== null)) break
            yield* realPause(25)
          }
        }).pipe(Effect.provide(configured(env)), Effect.scoped)
        assert.strictEqual(smtp.received.length, 1)
        assert.strictEqual(smtp.received[0]!.from, "mail@svc.test")
        const log = lines.join("\n")
        assert.include(log, "delivery failed")
        assert.include(log, "smtp://127.0.0.1:")
        for (const secret of ["s3cret", "100042", "link-42"]) assert.notInclude(log, secret)
        assert.notInclude((yield* outboxRows)[0]!.last_error, "s3cret")

        const bad = yield* Effect.exit(
          Layer.build(configured({ SMTP_URL: "http://mailer:s3cret@mail.test" })).pipe(Effect.scoped)
        )
        assert.isTrue(Exit.isFailure(bad))
        assert.include(String(bad), "SMTP_URL must be a URL starting with smtp:// or smtps://")
        assert.notInclude(String(bad), "s3cret")
        const off = yield* Effect.gen(function* () {
          return (yield* Mailer).enabled
        }).pipe(Effect.provide(configured({ SMTP_URL: " " })), Effect.scoped)
        assert.isFalse(off)
      }).pipe(Effect.scoped, Effect.provide(Store)),
    60_000
  )
})
