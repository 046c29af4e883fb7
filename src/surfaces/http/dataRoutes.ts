import { Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder, type HttpApiGroup } from "effect/http-api"
import { type Api, Caller } from "../../contract/api.ts"
import { isApiError } from "../../contract/errors.ts"
import { type Platform, platforms } from "../../domain/plans.ts"
import { type CallOutcome, runMetered } from "../../metering/pipeline.ts"
import type { AnyOperation, Freshness } from "../../operations/Operation.ts"
import type { IdempotencyStore } from "../../services/IdempotencyStore.ts"
import type { Ledger } from "../../services/Ledger.ts"
import type { RateLimits } from "../../services/RateLimits.ts"
import { Problems } from "../common/problems.ts"

export const envelopeResponse = (outcome: CallOutcome) => {
  const headers = {
    "x-receipt-id": outcome.envelope.receipt.id,
    "x-credits-charged": outcome.replayed ? "0" : String(outcome.envelope.receipt.charged),
    ...(outcome.replayed ? { "idempotent-replayed": "true" } : {})
  }
  return outcome.json === undefined
    ? HttpServerResponse.jsonUnsafe(outcome.envelope, { headers })
    : HttpServerResponse.text(outcome.json, { contentType: "application/json", headers })
}

/** What every data route's handler receives: the decoded query (own and common parameters) and headers. */
export interface DataRequest {
  readonly query: { readonly freshness?: Freshness; readonly max_credits?: number } & Record<string, unknown>
  readonly headers: { readonly "idempotency-key"?: string | undefined }
}

/**
 * A data call's answer: the decoded query split into the operation's parameters and the common
 * ones, the metered pipeline, the envelope or the problem.
 */
export const answerDataCall = <R>(
  problems: Problems["Service"],
  operation: AnyOperation<R>,
  caller: Caller["Service"],
  request: DataRequest
) => {
  const { freshness, max_credits, ...params } = request.query
  return runMetered(operation, {
    caller,
    params,
    freshness: freshness ?? "recent",
    maxCredits: max_credits,
    idempotencyKey: request.headers["idempotency-key"]
  }).pipe(
    Effect.map(envelopeResponse),
    Effect.catch((error) => (isApiError(error) ? Effect.succeed(problems.render(error)) : Effect.die(error)))
  )
}

/** The one handler shape every data route shares; the registry's operations differ only in their schemas. */
interface DataHandlers {
  readonly handle: (
    id: string,
    handler: (request: DataRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, unknown>
  ) => DataHandlers
}

type DataRoutes<R> = Layer.Layer<
  HttpApiGroup.Service<"svc", Platform>,
  never,
  Problems | Ledger | IdempotencyStore | RateLimits | R
>

/**
 * Handlers of every data operation: split the decoded query into the operation's parameters and
 * the common ones, run the metered pipeline, answer the envelope or the problem.
 */
export const dataRoutes = <R>(
  api: Api<AnyOperation<R>>,
  operations: ReadonlyArray<AnyOperation<R>>
): DataRoutes<R> =>
  platforms
    .filter((platform) => operations.some((operation) => operation.platform === platform))
    .map((platform) =>
      HttpApiBuilder.group(api, platform, (handlers) =>
        Effect.gen(function* () {
          const problems = yield* Problems
          const handle = (operation: AnyOperation<R>) => (request: DataRequest) =>
            Effect.flatMap(Caller, (caller) => answerDataCall(problems, operation, caller, request))
          // The group's endpoints are the registry's, typed per operation; every one of them takes the
          // same request shape here (`DataRequest`), so the handlers are attached through that shape.
          const loose = handlers as unknown as DataHandlers
          return operations
            .filter((operation) => operation.platform === platform)
            .reduce(
              (acc, operation) => acc.handle(operation.id, handle(operation)),
              loose
            ) as unknown as typeof handlers
        })
      )
    )
    // A platform without operations has no group in the Api built from the same registry, so
    // HttpApiBuilder.layer asks for exactly the groups built here.
    .reduce<DataRoutes<R>>((acc, layer) => Layer.merge(acc, layer), Layer.empty as unknown as DataRoutes<R>)
