import { Effect, Layer } from "effect"
import { HttpMethod, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import { AppConfig } from "../../config.ts"
import { Caller, Client, ClientIp, InputProblems, PlainInput, SpendKeyAuth } from "../../contract/api.ts"
import { controlCharacterInput } from "../../contract/controlCharacters.ts"
import type { ApiError } from "../../contract/errors.ts"
import { Governing, ManagementAuth } from "../../contract/governance.ts"
import { bearerCredential } from "../../identity/authorization.ts"
import { Bearers } from "../../identity/Bearers.ts"
import { asOrigin, RequestAddress } from "../../services/Audit.ts"
import { announcedBodyTooLarge } from "../common/limits.ts"
import { invalidInputFromSchemaError, Problems } from "../common/problems.ts"

/** Resolves the client IP once per request and refuses oversized bodies before anything reads them. */
export const ClientLayer = Layer.effect(
  Client,
  Effect.gen(function* () {
    const config = yield* AppConfig
    const problems = yield* Problems
    const bearers = yield* Bearers
    // hot path
    return (httpEffect) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const tooLarge = announcedBodyTooLarge(request.headers, config.maxBodyBytes)
        if (tooLarge !== undefined) return Effect.succeed(problems.render(tooLarge))
        return Effect.map(Effect.provideService(httpEffect, ClientIp, bearers.clientIp(request)), noStore)
      })
  })
)

/**
 * Every HTTP request's client address, for the audit log: a change made while a request is served
 * records where it came from, whoever the route then says acted (a management token's email, a
 * key, a sign-in). Provided once for the server; the address is worked out only when a change is
 * recorded (`RequestAddress`), not on every request.
 */
export const AuditAddressLayer = Layer.effect(
  RequestAddress,
  Effect.map(
    Bearers,
    (bearers) => (request: HttpServerRequest.HttpServerRequest) => bearers.clientIp(request)
  )
)

/**
 * Every answer of the API is the caller's own, and some carry a secret shown once (a key, a
 * token): no shared or browser cache may keep one (RFC 9111 no-store, RFC 6749 5.1).
 */
export const noStore = (response: HttpServerResponse.HttpServerResponse) =>
  response.headers["cache-control"] === undefined
    ? HttpServerResponse.setHeader(response, "cache-control", "no-store")
    : response

/** The bearer credential of a request, "" without one (which the bearer chain answers KEY_REQUIRED). */
const credentialOf = (request: HttpServerRequest.HttpServerRequest) =>
  bearerCredential(request.headers.authorization) ?? ""

/** The caller of a spend-key route: the principal behind the bearer credential, at the client's IP. */
export const callerOf = (
  bearers: Bearers["Service"],
  credential: string,
  ip: string
): Effect.Effect<Caller["Service"], ApiError> =>
  Effect.map(bearers.authenticate(credential), (found) => ({ ...found, ip }))

export const InputProblemsLayer = Layer.unwrap(
  Effect.map(Problems, (problems) =>
    HttpApiMiddleware.layerSchemaErrorTransform(InputProblems, (error) =>
      error.kind === "Body" || error.kind === "ResponseHeaders"
        ? Effect.die(error)
        : Effect.succeed(problems.render(invalidInputFromSchemaError(error)))
    )
  )
)

/**
 * A JSON body's members, judged as parameters are: the first member whose name or value (at any
 * depth) holds a control character. The body is read once (the request caches it); a body that
 * does not parse, or is not an object, is left to the route's schema to refuse.
 */
const jsonBodyInput = (request: HttpServerRequest.HttpServerRequest) => {
  if (!HttpMethod.hasBody(request.method)) return Effect.succeed(undefined)
  const type = request.headers["content-type"] ?? "application/json"
  if (!type.toLowerCase().includes("json")) return Effect.succeed(undefined)
  return Effect.map(Effect.result(request.text), (text) => {
    if (text._tag === "Failure" || text.success === "") return undefined
    let body: unknown
    try {
      body = JSON.parse(text.success)
    } catch {
      return undefined
    }
    return typeof body === "object" && body !== null && !Array.isArray(body)
      ? controlCharacterInput(body as Record<string, unknown>)
      : undefined
  })
}

export const PlainInputLayer = Layer.effect(
  PlainInput,
  Effect.gen(function* () {
    const problems = yield* Problems
    return (httpEffect) =>
      Effect.flatMap(HttpRouter.RouteContext, (route) =>
        Effect.flatMap(HttpServerRequest.ParsedSearchParams, (query) => {
          const refused = controlCharacterInput(route.params) ?? controlCharacterInput(query)
          if (refused !== undefined) return Effect.succeed(problems.render(refused))
          return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
            Effect.flatMap(jsonBodyInput(request), (inBody) =>
              inBody === undefined ? httpEffect : Effect.succeed(problems.render(inBody))
            )
          )
        })
      )
  })
)

export const SpendKeyAuthLayer = Layer.effect(
  SpendKeyAuth,
  Effect.gen(function* () {
    const problems = yield* Problems
    const bearers = yield* Bearers
    return SpendKeyAuth.of({
      // The request's own header, read by the one bearer parser (the same rule as the HttpApi's).
      bearer: (httpEffect) =>
        Effect.flatMap(Effect.all([ClientIp, HttpServerRequest.HttpServerRequest]), ([ip, request]) =>
          Effect.flatMap(Effect.result(callerOf(bearers, credentialOf(request), ip)), (caller) =>
            caller._tag === "Failure"
              ? Effect.succeed(problems.render(caller.failure))
              : Effect.provideService(httpEffect, Caller, caller.success)
          )
        )
    })
  })
)

/** Management routes: a management token's identity, or AUTH_REQUIRED for a spend key or nothing. */
export const ManagementAuthLayer = Layer.effect(
  ManagementAuth,
  Effect.gen(function* () {
    const problems = yield* Problems
    const bearers = yield* Bearers
    return ManagementAuth.of({
      management: (httpEffect) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          Effect.flatMap(Effect.result(bearers.governor(credentialOf(request))), (found) =>
            found._tag === "Failure"
              ? Effect.succeed(problems.render(found.failure))
              : Effect.flatMap(ClientIp, (ip) =>
                  httpEffect.pipe(
                    Effect.provideService(Governing, found.success),
                    asOrigin({ actor: { kind: "email", id: found.success.email }, ip })
                  )
                )
          )
        )
    })
  })
)
