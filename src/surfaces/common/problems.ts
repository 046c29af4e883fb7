import { Cause, Context, Effect, Layer, Option, SchemaIssue } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpApiError } from "effect/http-api"
import { AppConfig } from "../../config.ts"
import { type ApiError, errorCatalog, Internal, InvalidInput, isApiError } from "../../contract/errors.ts"
import { problemContext, toProblem } from "../../contract/problem.ts"
import { encodeX402Header } from "../../payments/x402Wire.ts"
import { Ids } from "../../services/Ids.ts"

/** Renders errors as `application/problem+json` responses; the one place REST turns a failure into bytes. */
export class Problems extends Context.Service<
  Problems,
  {
    /** `note`: a sentence added to the problem's message (a call that failed after its x402 payment settled). */
    readonly render: (error: ApiError, note?: string) => HttpServerResponse.HttpServerResponse
    /** Any failure: an ApiError renders as itself, anything else is logged and becomes INTERNAL with a trace id. */
    readonly fromUnknown: (
      cause: Cause.Cause<unknown>
    ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  }
>()("surfaces/common/Problems") {
  static readonly layer = Layer.effect(
    Problems,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const ids = yield* Ids
      const context = problemContext(config)
      const render = (error: ApiError, note?: string) => {
        const problem = toProblem(error, context)
        const body =
          note === undefined
            ? problem
            : { ...problem, message: `${problem.message} ${note}`, detail: `${problem.detail} ${note}` }
        const headers: Record<string, string> = {}
        if (body.retry_after_seconds !== undefined) headers["retry-after"] = String(body.retry_after_seconds)
        if (error._tag === "KeyRequired") headers["www-authenticate"] = 'Bearer realm="svc"'
        // x402's header form of `offer.x402`: what an x402 client pays before it retries.
        if (error._tag === "InsufficientCredits" && error.x402 !== undefined)
          headers["payment-required"] = encodeX402Header(error.x402)
        return HttpServerResponse.jsonUnsafe(body, {
          status: errorCatalog[error.code].status,
          contentType: "application/problem+json",
          headers
        })
      }
      // One generator function for every call (see `implement` in src/operations/Operation.ts).
      const fromUnknown = Effect.fnUntraced(function* (cause: Cause.Cause<unknown>) {
        const failure = Option.getOrUndefined(Cause.findErrorOption(cause))
        if (isApiError(failure)) return render(failure)
        // The client hung up: nobody reads this answer, and it is not a failure of ours.
        if (Cause.hasInterruptsOnly(cause)) return HttpServerResponse.empty({ status: 499 })
        const traceId = yield* ids.newId("trace")
        yield* Effect.logError("request failed", { traceId }, Cause.pretty(cause))
        return render(
          new Internal({
            message: `The service failed while handling this call (trace ${traceId}). Retry once; if it fails again, report this id.`
          })
        )
      })
      return Problems.of({ render, fromUnknown })
    })
  )
}

/** A parameter left out is said so ("`x` is required"), not in the schema library's words ("Missing key"). */
const missing = "\u0000missing"
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) => (issue._tag === "MissingKey" ? missing : SchemaIssue.defaultLeafHook(issue))
})

/** A request-decoding failure as INVALID_INPUT naming the first offending parameter. */
export const invalidInputFromSchemaError = (error: HttpApiError.HttpApiSchemaError): InvalidInput => {
  const issue = formatIssues(error.cause.issue).issues[0]
  const segment = issue?.path?.[0]
  const param =
    segment === undefined ? undefined : String(typeof segment === "object" ? segment.key : segment)
  const where = param === undefined ? `the request ${error.kind.toLowerCase()}` : `\`${param}\``
  if (issue?.message === missing)
    return new InvalidInput({
      message: param === undefined ? `A required part of ${where} is missing.` : `${where} is required.`,
      param
    })
  return new InvalidInput({
    message: `Invalid ${where}: ${issue?.message ?? "malformed value"}.`,
    param
  })
}
