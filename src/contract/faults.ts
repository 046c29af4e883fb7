import { Schema } from "effect"
import { platforms } from "../domain/plans.ts"

const NonNegative = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))

/** A patch of the simulated world's fault knobs, as `POST /faults` takes it. */
export const FaultsPatch = Schema.Struct({
  latencyMs: Schema.optionalKey(Schema.Struct({ min: NonNegative, max: NonNegative })),
  errorRate: Schema.optionalKey(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))),
  outage: Schema.optionalKey(Schema.Boolean),
  paused: Schema.optionalKey(Schema.Array(Schema.Literals(platforms)))
})
