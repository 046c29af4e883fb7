import type { Effect } from "effect"
import { Context, Data } from "effect"

/**
 * A speculative run of an operation: before any credit moves, the metered path runs the operation
 * on stored copies only. A copy that would need a live fetch stops it (`CacheMiss`, a defect the
 * path catches, then it runs the call the full way); writes a run makes that belong to a charged
 * call (a domain it resolved) wait in `afterCharge` and happen only once the call is charged.
 */
export interface Speculation {
  readonly afterCharge: Array<Effect.Effect<void>>
}

export const Speculating = Context.Reference<Speculation | undefined>("services/Speculating", {
  defaultValue: () => undefined
})

/** The speculative run needed a live fetch. */
export class CacheMiss extends Data.TaggedError("CacheMiss") {}
