import * as PgClient from "@effect/sql-pg/PgClient"
import * as PgConnection from "@effect/sql-pg/PgConnection"
import { Context, Effect, Exit, Layer, Option, Queue, Schedule, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
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

export interface Listening {
  /**
   * Succeeds with `true` once every notification committed before the call has reached
   * `onPayload`; `false` when that cannot be said (not subscribed, or the connection failed), so the
   * caller reads the database instead of what the notifications would have corrected.
   */
  readonly caughtUp: Effect.Effect<boolean>
}

/**
 * Round trips on the listening session, each shared by every request waiting when it starts. A
 * request waits for one that starts after it: PostgreSQL signals the listening backend at commit and
 * sends a notification before the result of any later statement on the session, so when the round
 * trip's answer arrives every notification committed before the request is in the queue.
 */
const makeRounds = (roundTrip: Effect.Effect<void, SqlError>) => {
  let waiting: Array<(ok: boolean) => void> = []
  let wake: (() => void) | undefined
  let closed = false
  const caughtUp = Effect.callback<boolean>((resume) => {
    if (closed) return resume(Effect.succeed(false))
    waiting.push((ok) => resume(Effect.succeed(ok)))
    if (wake !== undefined) {
      const started = wake
      wake = undefined
      started()
    }
  })
  const requested = Effect.callback<void>((resume) => {
    if (waiting.length > 0) resume(Effect.void)
    else wake = () => resume(Effect.void)
  })
  const run = Effect.forever(
    Effect.flatMap(requested, () => {
      const batch = waiting
      waiting = []
      return Effect.onExit(roundTrip, (exit) =>
        Effect.sync(() => {
          for (const done of batch) done(Exit.isSuccess(exit))
        })
      )
    })
  )
  const close = () => {
    closed = true
    wake = undefined
    const batch = waiting
    waiting = []
    for (const done of batch) done(false)
  }
  return { caughtUp, run, close }
}

/**
 * PostgreSQL `LISTEN`/`NOTIFY` for both stores: a dedicated connection on PostgreSQL (re-established
 * with backoff when it drops, reporting a gap each time), PGlite's one connection in process.
 * Without either (a bare `SqlClient`), nothing is ever delivered and `onListening` is never called,
 * so a cache that waits for it stays off.
 *
 * On PostgreSQL another instance's commit reaches this one's session a moment later; `caughtUp`
 * closes that moment with a round trip on the session. PGlite serves one instance (its data
 * directory is locked), so there is no other instance's commit to wait for.
 */
export class Notifications extends Context.Service<
  Notifications,
  {
    /** Listens on `channel` for as long as the scope lives, in the background. */
    readonly listen: (channel: string, listener: Listener) => Effect.Effect<Listening, never, Scope.Scope>
  }
>()("store/Notifications") {
  static readonly layer = Layer.effect(
    Notifications,
    Effect.gen(function* () {
      const pg = yield* Effect.serviceOption(PgClient.PgClient)
      const lite = yield* Effect.serviceOption(PgliteClient)
      const sql = yield* Effect.serviceOption(SqlClient.SqlClient)

      const onPostgres = (client: PgClient.PgClient, channel: string, listener: Listener) => {
        let session: ReturnType<typeof makeRounds> | undefined
        const subscribed = Effect.scoped(
          Effect.gen(function* () {
            // Its own session, so round trips on it queue behind nothing but each other.
            const connection = yield* (yield* PgConnection.make(client.config)).pin
            // Bound: the connection's queue of this channel's reports sets no limit of its own; it
            // is drained whole as soon as one arrives, so it holds what arrived since the last drain.
            const queue = yield* connection.listen(channel)
            // Takes and applies at once (no other fiber runs between), so a report out of the queue
            // has reached the listener.
            const drain = Effect.suspend((): Effect.Effect<void, SqlError> => {
              for (;;) {
                const next = Queue.takeUnsafe(queue)
                if (next === undefined) return Effect.void
                if (Exit.isFailure(next)) return next
                listener.onPayload(next.value.payload)
              }
            })
            const rounds = makeRounds(Effect.andThen(connection.query("select 1"), drain))
            yield* Effect.addFinalizer(() =>
              Effect.sync(() => {
                session = undefined
                rounds.close()
              })
            )
            listener.onGap()
            listener.onListening()
            session = rounds
            // Reports are applied as they come (`peek` waits without taking); a failed queue (the
            // connection lost) ends the session.
            yield* Effect.raceFirst(rounds.run, Effect.forever(Effect.andThen(Queue.peek(queue), drain)))
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
          Effect.forkScoped
        )
        const listening: Listening = {
          caughtUp: Effect.suspend(() => (session === undefined ? Effect.succeed(false) : session.caughtUp))
        }
        return Effect.as(subscribed, listening)
      }

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
          return { caughtUp: Effect.succeed(true) } satisfies Listening
        })

      const listen = (channel: string, listener: Listener): Effect.Effect<Listening, never, Scope.Scope> => {
        if (Option.isSome(pg)) return onPostgres(pg.value, channel, listener)
        if (Option.isSome(lite) && Option.isSome(sql))
          return onPglite(lite.value.pglite, sql.value)(channel, listener)
        return Effect.as(Effect.logDebug(`no LISTEN on this store: ${channel} is never delivered`), {
          caughtUp: Effect.succeed(false)
        })
      }
      return Notifications.of({ listen })
    })
  )
}
