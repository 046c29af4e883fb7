import * as PgClient from "@effect/sql-pg/PgClient"
import { Context, Effect, Layer, Option, Queue, Schedule, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { PgliteClient } from "./PgliteClient.ts"

export interface Listener {
  /** A notification's payload. */
  readonly onPayload: (payload: string) => void
  /**
   * Notifications may have been missed (the listener is starting, or lost its connection): forget
   * everything notifications would have corrected.
   */
  readonly onGap: () => void
  /** The listener is subscribed: from now on every committed notification reaches `onPayload`. */
  readonly onListening: () => void
}

/**
 * PostgreSQL `LISTEN`/`NOTIFY` for both stores: a dedicated connection on PostgreSQL (re-established
 * with backoff when it drops, reporting a gap each time), PGlite's one connection in process.
 * Without either (a bare `SqlClient`), nothing is ever delivered and `onListening` is never called,
 * so a cache that waits for it stays off.
 */
export class Notifications extends Context.Service<
  Notifications,
  {
    /** Listens on `channel` for as long as the scope lives, in the background. */
    readonly listen: (channel: string, listener: Listener) => Effect.Effect<void, never, Scope.Scope>
  }
>()("store/Notifications") {
  static readonly layer = Layer.effect(
    Notifications,
    Effect.gen(function* () {
      const pg = yield* Effect.serviceOption(PgClient.PgClient)
      const lite = yield* Effect.serviceOption(PgliteClient)
      const sql = yield* Effect.serviceOption(SqlClient.SqlClient)

      const onPostgres = (client: PgClient.PgClient, channel: string, listener: Listener) =>
        Effect.scoped(
          Effect.gen(function* () {
            const queue = yield* client.listen(channel)
            listener.onGap()
            listener.onListening()
            yield* Effect.forever(
              Effect.map(Queue.take(queue), (notification) => listener.onPayload(notification.payload))
            )
          })
        ).pipe(
          Effect.catchCause((cause) =>
            Effect.andThen(
              Effect.sync(listener.onGap),
              Effect.andThen(
                Effect.logWarning(`LISTEN ${channel} lost; listening again`, cause),
                Effect.fail(cause)
              )
            )
          ),
          Effect.retry(Schedule.min([Schedule.exponential("100 millis"), Schedule.spaced("5 seconds")])),
          Effect.ignore,
          Effect.forkScoped,
          Effect.asVoid
        )

      const onPglite = (pglite: PgliteClient["Service"]["pglite"], client: SqlClient.SqlClient) =>
        Effect.fnUntraced(function* (channel: string, listener: Listener) {
          // Through the SqlClient, which owns PGlite's one connection (never inside another's transaction).
          yield* Effect.orDie(client.unsafe(`LISTEN "${channel}"`))
          const off = pglite.onNotification((on, payload) => {
            if (on === channel) listener.onPayload(payload)
          })
          yield* Effect.addFinalizer(() => Effect.sync(off))
          listener.onGap()
          listener.onListening()
        })

      const listen = (channel: string, listener: Listener): Effect.Effect<void, never, Scope.Scope> => {
        if (Option.isSome(pg)) return onPostgres(pg.value, channel, listener)
        if (Option.isSome(lite) && Option.isSome(sql))
          return onPglite(lite.value.pglite, sql.value)(channel, listener)
        return Effect.logDebug(`no LISTEN on this store: ${channel} is never delivered`)
      }
      return Notifications.of({ listen })
    })
  )
}
