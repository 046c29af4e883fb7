import { type Duration, Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

/**
 * Real time, for waiting on work the TestClock does not move: a request running on the server's
 * fibers (it arrives over a socket and awaits the database), or another database session.
 */
export const realPause = (ms: number) =>
  Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/** Waits, in real time, until a call of the account holds its in-flight slot (its reservation is committed). */
export const untilInFlight = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    for (let attempt = 0; attempt < 2_000; attempt++) {
      const held = yield* sql`SELECT id FROM calls WHERE account_id = ${accountId} AND state = 'reserved'`
      if (held.length > 0) return
      yield* realPause(5)
    }
    return yield* Effect.die(new Error(`no call of ${accountId} came in flight`))
  }).pipe(Effect.orDie)

/**
 * Moves the TestClock `step` at a time until `fiber` is done, and joins it. A sleep on the
 * server's fibers can begin a moment after the test looks (the request goes through a socket and
 * the database first), so one adjustment might pass before it: step, let real I/O run, look again.
 */
export const advanceUntilDone = <A, E>(fiber: Fiber.Fiber<A, E>, step: Duration.Input = "1 second") =>
  Effect.gen(function* () {
    for (let attempt = 0; attempt < 1_000; attempt++) {
      if (fiber.pollUnsafe() !== undefined) return yield* Fiber.join(fiber)
      yield* TestClock.adjust(step)
      yield* realPause(2)
    }
    return yield* Effect.die(new Error("the fiber did not finish however far the clock moved"))
  })
