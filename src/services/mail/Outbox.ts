import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { Ids } from "../Ids.ts"
import type { Mail } from "./messages.ts"

/**
 * The outbox: every message is written here first, by the statement list of the change that
 * causes it. Called inside that change's `sql.withTransaction`, the message commits or rolls back
 * with it; the delivery worker (`Mailer`) sends it later, with retries.
 */
export class Outbox extends Context.Service<
  Outbox,
  { readonly enqueue: (mail: Mail) => Effect.Effect<string, SqlError> }
>()("services/mail/Outbox") {
  static readonly layer = Layer.effect(
    Outbox,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const ids = yield* Ids
      const enqueue = Effect.fn("Outbox.enqueue")(function* (mail: Mail) {
        const now = yield* Clock.currentTimeMillis
        const id = yield* ids.newId("mail")
        yield* sql`INSERT INTO outbox (id, to_email, subject, body_text, body_html, kind, next_attempt_at, created_at)
          VALUES (${id}, ${mail.to}, ${mail.subject}, ${mail.text}, ${mail.html}, ${mail.kind}, ${now}, ${now})`
        // One line per message, never its body (a code or a link): the operator reads it with
        // `admin outbox --email <to>` when no SMTP server is configured.
        yield* Effect.logInfo(`mail ${id} (${mail.kind}) to ${mail.to} queued`)
        return id
      })
      return Outbox.of({ enqueue })
    })
  )
}
