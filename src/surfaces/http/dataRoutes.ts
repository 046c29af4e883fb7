import { Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Caller, type makeApi } from "../../contract/api.ts"
import { isApiError } from "../../contract/errors.ts"
import { type CallOutcome, runMetered } from "../../metering/pipeline.ts"
import type { AnyOperation, Freshness } from "../../operations/Operation.ts"
import type { IdempotencyStore } from "../../services/IdempotencyStore.ts"
import type { Ledger } from "../../services/Ledger.ts"
import type { RateLimits } from "../../services/RateLimits.ts"
import { Problems } from "./problems.ts"

export const envelopeResponse = (outcome: CallOutcome) =>
  HttpServerResponse.jsonUnsafe(outcome.envelope, {
    headers: {
      "x-receipt-id": outcome.envelope.receipt.id,
      "x-credits-charged": outcome.replayed ? "0" : String(outcome.envelope.receipt.charged),
      ...(outcome.replayed ? { "idempotent-replayed": "true" } : {})
    }
  })

/**
 * Handlers of every data operation: split the decoded query into the operation's parameters and
 * the common ones, run the metered pipeline, answer the envelope or the problem.
 */
export const dataRoutes = <R>(api: ReturnType<typeof makeApi>, operations: ReadonlyArray<AnyOperation<R>>) =>
  [...new Set(operations.map((operation) => operation.platform))]
    .map(
      (platform) =>
        HttpApiBuilder.group(api as any, platform as never, (handlers: any) =>
          Effect.gen(function* () {
            const problems = yield* Problems
            return operations
              .filter((operation) => operation.platform === platform)
              .reduce(
                (acc, operation) =>
                  acc.handle(
                    operation.id,
                    ({
                      query,
                      headers
                    }: {
                      query: Record<string, unknown>
                      headers: Record<string, string | undefined>
                    }) =>
                      Effect.gen(function* () {
                        const caller = yield* Caller
                        const { freshness, max_credits, ...params } = query
                        const outcome = yield* runMetered(operation, {
                          caller,
                          params,
                          freshness: (freshness as Freshness | undefined) ?? "recent",
                          maxCredits: max_credits as number | undefined,
                          idempotencyKey: headers["idempotency-key"]
                        })
                        return envelopeResponse(outcome)
                      }).pipe(
                        Effect.catch((error) =>
                          isApiError(error) ? Effect.succeed(problems.render(error)) : Effect.die(error)
                        )
                      )
                  ),
                handlers
              )
          })
        ) as DataRoutesLayer<R>
    )
    .reduce((acc, layer) => Layer.merge(acc, layer), Layer.empty as DataRoutesLayer<R>)

/** The group layers are built from the registry at run time, so their type says only what they need. */
type DataRoutesLayer<R> = Layer.Layer<never, never, Problems | Ledger | IdempotencyStore | RateLimits | R>
