import {
  Clock,
  Config,
  Context,
  Data,
  Duration,
  Effect,
  Layer,
  Option,
  Redacted,
  Schedule,
  Schema
} from "effect"
import { SourceError } from "effect/ConfigProvider"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import * as Row from "../../store/rows.ts"

export interface MailerOptions {
  /** `smtp://` or `smtps://`, credentials allowed; undefined sends nothing (mail stays in the outbox). */
  readonly smtpUrl: Redacted.Redacted<string> | string | undefined
  readonly from: string
  /** How often the worker looks for due mail; 1 second unless given. */
  readonly pollEvery?: Duration.Input
}

/** A claim lasts this long: longer than one send may take (see `sendTimeout`), so no two senders overlap. */
const leaseMs = 60_000
const sendTimeout = Duration.seconds(45)
/** Retries never stop (an operator reads `last_error` in `admin outbox`); the wait doubles from 2 s up to 5 min. */
export const retryDelayMs = (attempts: number) => Math.min(2_000 * 2 ** Math.max(0, attempts - 1), 300_000)
const batch = 100

const ClaimedRow = Schema.Struct({
  id: Schema.String,
  to_email: Schema.String,
  subject: Schema.String,
  body_text: Schema.NullOr(Schema.String),
  body_html: Schema.NullOr(Schema.String),
  attempts: Row.Int
})
const decodeClaimed = Row.decoder(ClaimedRow, "outbox (claimed)")

class SendFailed extends Data.TaggedError("SendFailed")<{ readonly message: string }> {}

/** What the operator sees: the SMTP code and reply line, never the message nor the URL's password. */
const shortError = (error: unknown, password: string) => {
  const e = error as { readonly code?: unknown; readonly responseCode?: unknown; readonly message?: unknown }
  const parts = [e.code, e.responseCode, typeof e.message === "string" ? e.message : String(error)]
  const text = parts
    .filter((part) => part !== undefined && part !== null && part !== "")
    .join(" ")
    .replace(/\s+/g, " ")
  return (password === "" ? text : text.split(password).join("***")).slice(0, 300)
}

const passwordOf = (url: string) => {
  const raw = URL.canParse(url) ? new URL(url).password : ""
  return /%(?![0-9a-f]{2})/i.test(raw) ? raw : decodeURIComponent(raw)
}

/** Host and port only: what the start line may show of the URL. */
const describe = (url: string) => {
  if (!URL.canParse(url)) return "an unparsable SMTP URL"
  const parsed = new URL(url)
  return `${parsed.protocol}//${parsed.hostname}${parsed.port === "" ? "" : `:${parsed.port}`}`
}

/** SMTP_URL, trimmed; unset or empty is undefined. The error never repeats the value (it may hold a password). */
const smtpUrlConfig = Config.option(Config.Redacted("SMTP_URL")).pipe(
  Config.mapEffect((option) => {
    const url = Option.isNone(option) ? "" : Redacted.value(option.value).trim()
    if (url === "") return Effect.succeed(undefined)
    return /^smtps?:\/\/[^/]/i.test(url) && URL.canParse(url)
      ? Effect.succeed(Redacted.make(url))
      : Effect.fail(
          new Config.ConfigError(
            new SourceError({ message: "SMTP_URL must be a URL starting with smtp:// or smtps://" })
          )
        )
  })
)

/**
 * Delivers the outbox over SMTP. Each row is claimed before it is sent, by a conditional UPDATE
 * that sets `locked_until` (a lease), so two instances never send one row at once; a sent row's
 * bodies are cleared (they may hold a code or a link); a failed send is retried later, for ever,
 * with exponential backoff. Without an SMTP URL nothing is sent: messages stay in the outbox.
 */
export class Mailer extends Context.Service<
  Mailer,
  {
    readonly enabled: boolean
    /** Sends every message due now (claimed by no one else); succeeds with how many were sent. */
    readonly deliverDue: Effect.Effect<number, SqlError>
  }
>()("services/mail/Mailer") {
  /** The service without its polling fiber (a test can make two over one database). */
  static readonly make = Effect.fn("Mailer.make")(function* (options: MailerOptions) {
    const sql = yield* SqlClient.SqlClient
    if (options.smtpUrl === undefined) return Mailer.of({ enabled: false, deliverDue: Effect.succeed(0) })
    const url = Redacted.isRedacted(options.smtpUrl) ? Redacted.value(options.smtpUrl) : options.smtpUrl
    const password = passwordOf(url)
    // Loaded only with SMTP configured: without it, mail waits in the outbox and nodemailer is dead weight.
    const { default: nodemailer } = yield* Effect.promise(() => import("nodemailer"))
    const transport = yield* Effect.acquireRelease(
      Effect.sync(() =>
        nodemailer.createTransport({
          url,
          connectionTimeout: 10_000,
          greetingTimeout: 10_000,
          socketTimeout: 30_000
        })
      ),
      (transport) => Effect.sync(() => transport.close())
    )

    const send = (row: typeof ClaimedRow.Type) =>
      Effect.tryPromise({
        try: (signal) =>
          transport.sendMail({
            from: options.from,
            to: row.to_email,
            subject: row.subject,
            ...(row.body_text === null ? {} : { text: row.body_text }),
            ...(row.body_html === null ? {} : { html: row.body_html }),
            signal
          }),
        catch: (error) => new SendFailed({ message: shortError(error, password) })
      }).pipe(
        Effect.timeoutOrElse({
          duration: sendTimeout,
          orElse: () => Effect.fail(new SendFailed({ message: "timed out" }))
        })
      )

    /** The next due row nobody holds, now held by us until `lockedUntil`. */
    const claimNext = (now: number, lockedUntil: number) =>
      sql`UPDATE outbox SET locked_until = ${lockedUntil}
        WHERE id = (
          SELECT id FROM outbox
          WHERE sent_at IS NULL AND next_attempt_at <= ${now} AND (locked_until IS NULL OR locked_until <= ${now})
          ORDER BY next_attempt_at, created_at LIMIT 1
          FOR UPDATE SKIP LOCKED
        ) AND sent_at IS NULL AND (locked_until IS NULL OR locked_until <= ${now})
        RETURNING id, to_email, subject, body_text, body_html, attempts`.pipe(
        Effect.flatMap(decodeClaimed),
        Effect.map((rows) => rows[0])
      )

    const deliverOne = Effect.fn("Mailer.deliverOne")(function* (
      row: typeof ClaimedRow.Type,
      lockedUntil: number
    ) {
      const sent = yield* Effect.result(send(row))
      const now = yield* Clock.currentTimeMillis
      if (sent._tag === "Success") {
        // Sent: recording it is worth a few tries, since a row left unmarked is sent again after its lease.
        yield* sql`UPDATE outbox SET sent_at = ${now}, body_text = NULL, body_html = NULL, locked_until = NULL
          WHERE id = ${row.id} AND sent_at IS NULL`.pipe(
          Effect.retry({ times: 5, schedule: Schedule.exponential("100 millis") })
        )
        return true
      }
      const attempts = row.attempts + 1
      const nextAttemptAt = now + retryDelayMs(attempts)
      // Only while the claim is still ours: a row another sender took over is its business now.
      yield* sql`UPDATE outbox SET attempts = ${attempts}, last_error = ${sent.failure.message},
          next_attempt_at = ${nextAttemptAt}, locked_until = NULL
        WHERE id = ${row.id} AND sent_at IS NULL AND locked_until = ${lockedUntil}`
      yield* Effect.logWarning("mail: delivery failed; will retry").pipe(
        Effect.annotateLogs({
          mail: row.id,
          attempts,
          error: sent.failure.message,
          retry_in_ms: nextAttemptAt - now
        })
      )
      return false
    })

    const deliverDue = Effect.gen(function* () {
      let sent = 0
      for (let n = 0; n < batch; n++) {
        const now = yield* Clock.currentTimeMillis
        const lockedUntil = now + leaseMs
        const row = yield* claimNext(now, lockedUntil)
        if (row === undefined) break
        // Stopped mid-send (the process shutting down): the row is free again for another instance.
        const delivered = yield* deliverOne(row, lockedUntil).pipe(
          Effect.onInterrupt(() =>
            Effect.ignore(
              sql`UPDATE outbox SET locked_until = NULL
                WHERE id = ${row.id} AND sent_at IS NULL AND locked_until = ${lockedUntil}`
            )
          )
        )
        if (delivered) sent++
      }
      return sent
    }).pipe(Effect.withSpan("Mailer.deliverDue"))

    return Mailer.of({ enabled: true, deliverDue })
  })

  /** The service and its worker: every `pollEvery` (1 s), it delivers what is due. */
  static readonly layerWith = (options: MailerOptions) =>
    Layer.effect(
      Mailer,
      Effect.gen(function* () {
        const mailer = yield* Mailer.make(options)
        if (!mailer.enabled || options.smtpUrl === undefined) {
          yield* Effect.logInfo("mail: SMTP_URL is unset; messages stay in the outbox (admin outbox)")
          return mailer
        }
        const url = Redacted.isRedacted(options.smtpUrl) ? Redacted.value(options.smtpUrl) : options.smtpUrl
        yield* Effect.logInfo(`mail: delivering the outbox via ${describe(url)} from ${options.from}`)
        yield* Effect.forkScoped(
          mailer.deliverDue.pipe(
            Effect.catchCause((cause) => Effect.logWarning("mail: the outbox could not be read", cause)),
            Effect.repeat(Schedule.spaced(options.pollEvery ?? "1 second"))
          )
        )
        return mailer
      })
    )

  /** SMTP_URL (unset or empty: nothing is sent) and MAIL_FROM. */
  static readonly layer = Layer.unwrap(
    Effect.gen(function* () {
      const smtpUrl = yield* smtpUrlConfig
      const from = yield* Config.String("MAIL_FROM").pipe(Config.withDefault("svc <no-reply@localhost>"))
      return Mailer.layerWith({ smtpUrl, from })
    })
  )

  /** Delivers what is due now with the Mailer in context; the count sent. */
  static readonly deliverDue = Mailer.use((mailer) => mailer.deliverDue)
}
