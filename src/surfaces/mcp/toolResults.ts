import type { CallToolResult } from "@modelcontextprotocol/server"
import { Cause, Effect, Option } from "effect"
import { AppConfig } from "../../config.ts"
import { type ApiError, Internal, isApiError } from "../../contract/errors.ts"
import { type ProblemBody, problemContext, toProblem } from "../../contract/problem.ts"
import { Ids } from "../../services/Ids.ts"

/** The JSON of each result `structuredResult` built: its structured content's, which is its text. */
const jsonTexts = new WeakMap<CallToolResult, string>()

/**
 * The JSON text of a result's structured content when `structuredResult` built it (exactly
 * `{ content: [its text], structuredContent }`, never changed since), so that serialising the
 * result need not serialise the envelope again.
 */
export const jsonTextOf = (result: CallToolResult): string | undefined => jsonTexts.get(result)

/** A value as both structured content and its JSON text, for clients that read only text. */
export const structuredResult = (value: object): CallToolResult => {
  const text = JSON.stringify(value)
  const result: CallToolResult = {
    content: [{ type: "text", text }],
    structuredContent: value as Record<string, unknown>
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
export const problemResult = (problem: ProblemBody): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(problem) }],
  isError: true
})

/**
 * Settles one tool call into a result and never fails: an ApiError becomes its problem, anything
 * else (a defect) is logged and becomes INTERNAL with a trace id, so a `tools/call` never hangs.
 */
export const toToolResult = <R>(effect: Effect.Effect<object, ApiError, R>) =>
  effect.pipe(
    Effect.map(structuredResult),
    Effect.catchCause((cause) =>
      Effect.gen(function* () {
        const config = yield* AppConfig
        const context = problemContext(config)
        const failure = Option.getOrUndefined(Cause.findErrorOption(cause))
        if (isApiError(failure)) return problemResult(toProblem(failure, context))
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
  )
