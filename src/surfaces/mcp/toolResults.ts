import type { CallToolResult } from "@modelcontextprotocol/server"
import { Cause, Effect, Option } from "effect"
import { AppConfig } from "../../config.ts"
import { type ApiError, Internal, isApiError } from "../../contract/errors.ts"
import { type ProblemBody, problemContext, toProblem } from "../../contract/problem.ts"
import type { CallOutcome, Metered, RateState } from "../../metering/meterDataCall.ts"
import { Ids } from "../../services/Ids.ts"
import { forMcp } from "../common/wording.ts"
import { pricedForMcp } from "./x402.ts"

/** The JSON of each result `structuredResult` built: its structured content's, which is its text. */
const jsonTexts = new WeakMap<CallToolResult, string>()

/**
 * The JSON text of a result's structured content when `structuredResult` built it (exactly
 * `{ content: [its text], structuredContent }`, never changed since), so that serialising the
 * result need not serialise the envelope again.
 */
export const jsonTextOf = (result: CallToolResult): string | undefined => jsonTexts.get(result)

/**
 * A value as both structured content and its JSON text, for clients that read only text; `meta` is
 * its `_meta`. `text`, when given, is `JSON.stringify(value)` made already (a metered call's `json`).
 */
export const structuredResult = (
  value: object,
  meta?: Record<string, unknown>,
  text: string = JSON.stringify(value)
): CallToolResult => {
  const result: CallToolResult = {
    content: [{ type: "text", text }],
    structuredContent: value as Record<string, unknown>,
    ...(meta === undefined ? {} : { _meta: meta })
  }
  jsonTexts.set(result, text)
  return result
}

/**
 * A metered failure: the problem body REST would send, as the error result's JSON text. Not as
 * `structuredContent`: that must match the tool's `outputSchema` (the envelope), and clients such
 * as the MCP Inspector check it even on errors. Widening every output schema to "envelope or
 * problem" would blur the success type that typed clients generate from it.
 */
export const problemResult = (problem: ProblemBody, meta?: Record<string, unknown>): CallToolResult => {
  const x402 = problem.offer?.x402
  if (x402 === undefined)
    return {
      content: [{ type: "text", text: JSON.stringify(problem) }],
      isError: true,
      ...(meta === undefined ? {} : { _meta: meta })
    }
  // x402's MCP transport: a payment-needed error result's `structuredContent` is the
  // `PaymentRequired` object, the same JSON as its text; the problem's members ride beside it.
  const paymentRequired = { ...x402, ...problem }
  return {
    content: [{ type: "text", text: JSON.stringify(paymentRequired) }],
    structuredContent: paymentRequired,
    isError: true,
    ...(meta === undefined ? {} : { _meta: meta })
  }
}

/** A problem as an MCP agent reads it: its message names tools, not REST routes. */
const forAgents = (problem: ProblemBody, baseUrl: string): ProblemBody => {
  const message = forMcp(problem.message, baseUrl)
  return message === problem.message ? problem : { ...problem, message, detail: message }
}

/**
 * A tool call's result whatever happens: an ApiError becomes its problem, anything else (a defect)
 * is logged and becomes INTERNAL with a trace id, so a `tools/call` never hangs.
 */
export const settledResult = <R>(effect: Effect.Effect<CallToolResult, ApiError, R>) =>
  Effect.catchCause(effect, (cause) =>
    Effect.gen(function* () {
      const config = yield* AppConfig
      const context = problemContext(config)
      const found = Option.getOrUndefined(Cause.findErrorOption(cause))
      const failure = found?._tag === "InsufficientCredits" ? yield* pricedForMcp(found) : found
      if (isApiError(failure)) return problemResult(forAgents(toProblem(failure, context), config.baseUrl))
      const traceId = yield* (yield* Ids).newId("trace")
      yield* Effect.logError("MCP tool call failed", { traceId }, Cause.pretty(cause))
      return problemResult(
        toProblem(
          new Internal({
            message: `The service failed while handling this call (trace ${traceId}). Retry once; if it fails again, report this id.`
          }),
          context
        )
      )
    })
  )

/** Settles one tool call's value or problem into a result; never fails. */
export const toToolResult = <R>(effect: Effect.Effect<object, ApiError, R>) =>
  settledResult(Effect.map(effect, (value) => structuredResult(value)))

/**
 * What REST's usage headers say, as a result's `_meta`: the rate limit always, and once charged the
 * credits charged and left, and what a capped key has left.
 */
const usageMeta = (rate: RateState, outcome: CallOutcome | undefined) => {
  const remaining = outcome?.remaining
  return {
    [usageMetaKey]: {
      rate_limit: {
        policy: rate.plan,
        limit: rate.limit,
        window_seconds: rate.windowSeconds,
        remaining: rate.remaining,
        reset_seconds: rate.resetSeconds
      },
      ...(outcome === undefined || remaining === undefined
        ? {}
        : {
            credits_charged: outcome.receipt.charged,
            credits_remaining: remaining.credits,
            ...(remaining.keyCap === undefined ? {} : { key_cap_remaining: remaining.keyCap })
          })
    }
  }
}

/** Where a data tool's result carries its usage numbers. */
export const usageMetaKey = "svc/usage"

/** A metered call's result: the envelope, or its problem, with the usage in `_meta`. */
export const meteredResult = <E extends ApiError>(metered: Metered<E>) => {
  const { result, rate } = metered
  return result._tag === "Success"
    ? Effect.succeed(
        structuredResult(result.success.envelope, usageMeta(rate, result.success), result.success.json)
      )
    : Effect.map(settledResult(Effect.fail(result.failure)), (failed) => ({
        ...failed,
        _meta: usageMeta(rate, undefined)
      }))
}
