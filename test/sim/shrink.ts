import { Effect } from "effect"
import type { Step } from "./schedule.ts"

/**
 * The shortest failing prefix of a failing schedule (the run stops at its failing step, so the
 * prefix up to it fails; bisection finds whether a shorter one does too), then steps dropped one
 * at a time while it still fails. `fails` runs a schedule from scratch.
 */
export const shrink = <E, R>(
  schedule: ReadonlyArray<Step>,
  failedAt: number,
  fails: (steps: ReadonlyArray<Step>) => Effect.Effect<boolean, E, R>,
  budget = 60
) =>
  Effect.gen(function* () {
    let runs = 0
    const tryIt = (steps: ReadonlyArray<Step>) => {
      runs += 1
      return fails(steps)
    }
    // The prefix up to the failing step fails; look for a shorter one.
    let low = 0
    let high = Math.min(failedAt, schedule.length)
    while (low + 1 < high && runs < budget / 2) {
      const middle = Math.floor((low + high) / 2)
      if (yield* tryIt(schedule.slice(0, middle))) high = middle
      else low = middle
    }
    let steps = schedule.slice(0, high)
    // Then drop single steps, from the end, while it still fails.
    for (let index = steps.length - 2; index >= 0 && runs < budget; index--) {
      const fewer = [...steps.slice(0, index), ...steps.slice(index + 1)]
      if (yield* tryIt(fewer)) steps = fewer
    }
    return { steps, runs }
  })
