import { Effect, Schema } from "effect"
import { type Answer, type Args, type Method, upstreamMethods } from "../methods.ts"
import type { UpstreamFailure } from "../Upstream.ts"

/**
 * The upstream provider contract: `POST {baseUrl}/v1/call/{method}` with `{"args": [...]}` answers
 * `200 {"result": ...}`. Both are the encoded side of the method's declared schemas, so an absent
 * argument or answer travels as null (JSON has no undefined).
 */
export const callPath = (method: string) => `/v1/call/${encodeURIComponent(method)}`

export interface CallBody {
  readonly args: ReadonlyArray<unknown>
}

/**
 * The wire form of typed arguments. Arguments that do not encode are our bug, not the provider's
 * (callers are typechecked against the declaration), so they are a defect and nothing is sent.
 */
export const encodeArgs = <M extends Method>(method: M, args: Args<M>): Effect.Effect<CallBody> =>
  Schema.encodeEffect(upstreamMethods[method].args)(args).pipe(
    Effect.map((encoded) => ({ args: encoded })),
    Effect.catch((error) =>
      Effect.die(new Error(`Arguments of ${method} do not match its declaration: ${error.message}`))
    )
  )

/** The provider's answer, checked against the method's declared answer. */
export const decodeAnswer = <M extends Method>(
  method: M,
  result: unknown
): Effect.Effect<Answer<M>, Schema.SchemaError> =>
  Schema.decodeUnknownEffect(upstreamMethods[method].answer)(result)

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Reasons a provider may name in a failure body, `{"error": reason}`. */
export const failureReasons = ["error", "outage", "paused"] as const satisfies ReadonlyArray<
  UpstreamFailure["reason"]
>
export type FailureReason = (typeof failureReasons)[number]

export const isFailureReason = (value: unknown): value is FailureReason =>
  typeof value === "string" && (failureReasons as ReadonlyArray<string>).includes(value)
