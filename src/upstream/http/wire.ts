import { Schema } from "effect"
import { platforms } from "../../domain/plans.ts"
import type { Answer, Method, UpstreamFailure } from "../Upstream.ts"

/**
 * The upstream provider contract: `POST {baseUrl}/v1/call/{method}` with `{"args": [...]}` answers
 * `200 {"result": ...}`. JSON has no undefined, so an absent argument or answer travels as null.
 */
export const callPath = (method: string) => `/v1/call/${encodeURIComponent(method)}`

export interface CallBody {
  readonly args: ReadonlyArray<unknown>
}

export const encodeArgs = (args: ReadonlyArray<unknown>): CallBody => ({
  args: args.map((arg) => (arg === undefined ? null : arg))
})

/** Top-level nulls back to undefined: no upstream method takes a null argument. */
export const readArgs = (args: ReadonlyArray<unknown>): ReadonlyArray<unknown> =>
  args.map((arg) => (arg === null ? undefined : arg))

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const encodeResult = (answer: unknown): { readonly result: unknown } => ({ result: answer ?? null })

/**
 * The provider's answer, trusted structurally: null is "not found", and `getForumPosts` answers
 * one entry per id with null where no post exists.
 */
export const decodeResult = <M extends Method>(method: M, result: unknown): Answer<M> => {
  if (result === null) return undefined as Answer<M>
  if (method === "getForumPosts" && Array.isArray(result)) {
    return result.map((post: unknown) => (post === null ? undefined : post)) as Answer<M>
  }
  return result as Answer<M>
}

/** Reasons a provider may name in a failure body, `{"error": reason}`. */
export const failureReasons = ["error", "outage", "paused"] as const satisfies ReadonlyArray<
  UpstreamFailure["reason"]
>
export type FailureReason = (typeof failureReasons)[number]

export const isFailureReason = (value: unknown): value is FailureReason =>
  typeof value === "string" && (failureReasons as ReadonlyArray<string>).includes(value)

const NonNegative = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))

/** A patch of the simulated world's fault knobs, as `POST /faults` takes it. */
export const FaultsPatch = Schema.Struct({
  latencyMs: Schema.optionalKey(Schema.Struct({ min: NonNegative, max: NonNegative })),
  errorRate: Schema.optionalKey(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))),
  outage: Schema.optionalKey(Schema.Boolean),
  paused: Schema.optionalKey(Schema.Array(Schema.Literals(platforms)))
})
