import { Duration, Effect, Option, Queue } from "effect"

/**
 * A background worker's loop. `step` does one unit of work and says whether it found any: while it
 * does, it runs again at once; when it finds none, the worker waits, first `first`, then twice as
 * long each time it still finds none, up to `max` (an idle instance looks rarely), or, with no
 * `max`, until it is woken. An item on `wake` (work queued on this instance) ends a wait early and
 * starts the waits over from `first`.
 */
export const pollLoop = <R>(options: {
  readonly step: Effect.Effect<boolean, never, R>
  readonly wake: Queue.Dequeue<unknown>
  readonly first: Duration.Input
  readonly max: Duration.Input | undefined
}): Effect.Effect<never, never, R> =>
  Effect.gen(function* () {
    const first = Duration.toMillis(options.first)
    const max = options.max === undefined ? undefined : Math.max(first, Duration.toMillis(options.max))
    let wait = first
    while (true) {
      if (yield* options.step) {
        wait = first
        continue
      }
      const woken =
        max === undefined
          ? Option.some(yield* Queue.take(options.wake))
          : yield* Effect.timeoutOption(Queue.take(options.wake), Duration.millis(wait))
      wait = Option.isSome(woken) || max === undefined ? first : Math.min(wait * 2, max)
    }
  })
