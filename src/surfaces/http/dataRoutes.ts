import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { AppConfig } from "../../config.ts"
import { dataQueryDecoder } from "../../contract/api.ts"
import { controlCharacterInput } from "../../contract/controlCharacters.ts"
import { type InsufficientCredits, type InvalidInput, isApiError } from "../../contract/errors.ts"
import { prefersReceiptSignature, receiptSignaturePreference } from "../../contract/receiptSignature.ts"
import { bearerCredential } from "../../identity/authorization.ts"
import { Bearers, type Principal } from "../../identity/Bearers.ts"
import {
  type CallInput,
  type CallOutcome,
  type Metered,
  meterDataCall,
  type RateState
} from "../../metering/meterDataCall.ts"
import { ReceiptSigner, signedAnswer } from "../../metering/ReceiptSigner.ts"
import type { AnyOperation, Freshness } from "../../operations/Operation.ts"
import { X402 } from "../../payments/X402.ts"
import { announcedBodyTooLarge } from "../common/limits.ts"
import { invalidInputFromSchemaError, Problems } from "../common/problems.ts"
import { noStore } from "./middleware.ts"
import { parseQuery } from "./queryString.ts"
import { payThenCall } from "./x402Inline.ts"

/**
 * The usage headers of every metered answer: the plan's rate limit and what is left of it
 * (draft-ietf-httpapi-ratelimit-headers), and once charged the credits charged and left, and what
 * a capped key has left.
 */
const usageHeaders = (rate: RateState, outcome: CallOutcome | undefined): Record<string, string> => {
  const headers: Record<string, string> = {
    "ratelimit-policy": `"${rate.plan}";q=${rate.limit};w=${rate.windowSeconds}`,
    ratelimit: `"${rate.plan}";r=${rate.remaining};t=${rate.resetSeconds}`
  }
  const remaining = outcome?.remaining
  if (outcome === undefined || remaining === undefined) return headers
  headers["credits-charged"] = String(outcome.receipt.charged)
  headers["credits-remaining"] = String(remaining.credits)
  if (remaining.keyCap !== undefined) headers["key-cap-remaining"] = String(remaining.keyCap)
  return headers
}

/**
 * A metered answer. When the path made its JSON already, the headers name the content type and
 * length and `no-store` too (so `noStore` leaves the response as it is): the response's copy of
 * the headers then only sets values it has, where adding those two made V8 new hidden classes, in
 * the old generation, for every answer (docs/performance.md, round 22).
 */
export const envelopeResponse = (outcome: CallOutcome, extra: Record<string, string> = {}) => {
  const headers = {
    ...extra,
    "x-receipt-id": outcome.receipt.id,
    "x-credits-charged": outcome.replayed ? "0" : String(outcome.receipt.charged),
    ...(outcome.replayed ? { "idempotent-replayed": "true" } : {})
  }
  const { json } = outcome
  if (json === undefined) return HttpServerResponse.jsonUnsafe(outcome.envelope, { headers })
  const contentType = "application/json"
  return HttpServerResponse.text(json, {
    contentType,
    headers: {
      ...headers,
      "content-type": contentType,
      "content-length": String(Buffer.byteLength(json)),
      "cache-control": "no-store"
    }
  })
}

/** What an answer whose receipt was signed on request says (RFC 7240). */
const signatureApplied = { "preference-applied": receiptSignaturePreference }

/**
 * A metered answer on the wire: the envelope or the problem, with the usage headers. An
 * INSUFFICIENT_CREDITS carries the x402 payment that buys what is missing where the rail is
 * offered (`priced`, for the request's URL).
 */
const meteredResponse = (
  problems: Problems["Service"],
  metered: Metered<InvalidInput>,
  request: HttpServerRequest.HttpServerRequest,
  priced:
    | ((failure: InsufficientCredits, request: HttpServerRequest.HttpServerRequest) => InsufficientCredits)
    | undefined,
  /** Whether the receipt was signed on request (`Prefer: receipt-signature`). */
  signed: boolean,
  /** Said in the problem of a call that failed after its x402 payment settled. */
  note?: string
) => {
  const { result, rate } = metered
  if (result._tag === "Success") {
    const headers = usageHeaders(rate, result.success)
    return envelopeResponse(result.success, signed ? { ...headers, ...signatureApplied } : headers)
  }
  const failure =
    priced !== undefined && result.failure._tag === "InsufficientCredits"
      ? priced(result.failure, request)
      : result.failure
  return HttpServerResponse.setHeaders(problems.render(failure, note), usageHeaders(rate, undefined))
}

/**
 * How REST carries a data call: its query string, read with the endpoint's own schema (the
 * contract's), refusing control characters first, and its `Idempotency-Key` header as sent (its
 * length is the metering front door's check, the same for MCP's `idempotency_key`).
 */
const restInput = (operation: AnyOperation) => {
  const query = dataQueryDecoder(operation)
  return (request: HttpServerRequest.HttpServerRequest): Effect.Effect<CallInput, InvalidInput> =>
    Effect.suspend(() => {
      const at = request.url.indexOf("?")
      const parsed = parseQuery(at === -1 ? "" : request.url.slice(at + 1))
      const refused = controlCharacterInput(parsed)
      if (refused !== undefined) return Effect.fail(refused)
      const idempotencyKey: string | undefined = request.headers["idempotency-key"]
      return HttpApiError.HttpApiSchemaError.wrap("Query", query(parsed)).pipe(
        Effect.mapError(invalidInputFromSchemaError),
        Effect.map(({ freshness, max_credits, ...params }) => ({
          params,
          freshness: (freshness as Freshness | undefined) ?? "recent",
          maxCredits: max_credits as number | undefined,
          idempotencyKey
        }))
      )
    })
}

/**
 * `GET /v1/<platform>/<operation>` of every data operation: a wire adapter and nothing more. It
 * refuses a body announced too large, resolves the bearer into the caller, and hands the metering
 * front door (`meterDataCall`) its reading of the query and headers; the outcome is the envelope
 * or the problem. The contract (`makeApi`) describes these routes for OpenAPI and the typed client.
 */
export const DataRoutes = <R>(operations: ReadonlyArray<AnyOperation<R>>) =>
  HttpRouter.use((router) =>
    Effect.gen(function* () {
      const problems = yield* Problems
      const bearers = yield* Bearers
      const x402 = yield* X402
      const { maxBodyBytes, baseUrl } = yield* AppConfig
      // The request's URL as x402's `resource` names it.
      const resourceOf = (request: HttpServerRequest.HttpServerRequest) => `${baseUrl}${request.url}`
      // The call's `max_credits`, which x402's upto scheme (where offered) authorizes.
      const maxCreditsOf = (request: HttpServerRequest.HttpServerRequest) => {
        const at = request.url.indexOf("?")
        const given = at === -1 ? undefined : parseQuery(request.url.slice(at + 1)).max_credits
        return typeof given === "string" && /^[0-9]{1,16}$/.test(given) ? Number(given) : undefined
      }
      const priced = Option.isSome(x402.config)
        ? (failure: InsufficientCredits, request: HttpServerRequest.HttpServerRequest) =>
            x402.offerOn(failure, resourceOf(request), { maxCredits: maxCreditsOf(request) })
        : undefined
      const payThen = payThenCall(x402, bearers)
      const signed = signedAnswer(yield* ReceiptSigner)
      for (const operation of operations) {
        const input = restInput(operation)
        // hot path
        const answer = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
          const tooLarge = announcedBodyTooLarge(request.headers, maxBodyBytes)
          if (tooLarge !== undefined) return Effect.succeed(problems.render(tooLarge))
          const ip = bearers.clientIp(request)
          // Signing only when asked: the default answer pays nothing for it.
          const signing = prefersReceiptSignature(request.headers.prefer)
          const credential = bearerCredential(request.headers.authorization) ?? ""
          const payment = request.headers["payment-signature"]
          const meter = (principal: Principal) => {
            const metered = meterDataCall(operation, { ...principal, ip }, input(request))
            return signing ? Effect.flatMap(metered, signed) : metered
          }
          const respond = (answered: Metered<InvalidInput>, note?: string) =>
            meteredResponse(problems, answered, request, priced, signing, note)
          // Only a retry carrying an x402 payment takes the payment step.
          return (
            payment === undefined || priced === undefined
              ? Effect.map(Effect.flatMap(bearers.authenticateToCharge(credential), meter), (answered) =>
                  respond(answered)
                )
              : payThen(credential, payment, resourceOf(request), meter, respond, (failure) =>
                  priced(failure, request)
                )
          ).pipe(
            Effect.catch((error) =>
              isApiError(error) ? Effect.succeed(problems.render(error)) : Effect.die(error)
            ),
            Effect.map(noStore),
            Effect.interruptible
          )
        })
        yield* router.add("GET", `/v1${operation.path}`, answer)
      }
    })
  )
