import { Effect, Layer, Option, Redacted } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import { AppConfig } from "../../config.ts"
import { Caller, Client, ClientIp, InputProblems, PlainInput, SpendKeyAuth } from "../../contract/api.ts"
import { controlCharacterInput } from "../../contract/controlCharacters.ts"
import { KeyRequired, PayloadTooLarge, Unauthorized } from "../../contract/errors.ts"
import { clientIp } from "../../domain/clientIp.ts"
import { platforms } from "../../domain/plans.ts"
import { spendKeyPattern } from "../../domain/secrets.ts"
import { notEntitled } from "../../metering/pipeline.ts"
import { Accounts } from "../../services/Accounts.ts"
import { invalidInputFromSchemaError, Problems } from "./problems.ts"

/** Resolves the client IP once per request and refuses oversized bodies before anything reads them. */
export const ClientLayer = Layer.effect(
  Client,
  Effect.gen(function* () {
    const config = yield* AppConfig
    const problems = yield* Problems
    return (httpEffect) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const length = Number(request.headers["content-length"] ?? "0")
        if (length > config.maxBodyBytes) {
          return problems.render(
            new PayloadTooLarge({
              message: `The request body is ${length} bytes; the limit is ${config.maxBodyBytes}.`
            })
          )
        }
        const ip = requestIp(request, config.trustedProxies)
        return yield* Effect.provideService(httpEffect, ClientIp, ip)
      })
  })
)

export const requestIp = (request: HttpServerRequest.HttpServerRequest, trusted: ReadonlyArray<string>) =>
  clientIp(
    Option.getOrElse(request.remoteAddress, () => "0.0.0.0"),
    request.headers["x-forwarded-for"],
    trusted
  )

export const InputProblemsLayer = Layer.unwrap(
  Effect.map(Problems, (problems) =>
    HttpApiMiddleware.layerSchemaErrorTransform(InputProblems, (error) =>
      error.kind === "Body" || error.kind === "ResponseHeaders"
        ? Effect.die(error)
        : Effect.succeed(problems.render(invalidInputFromSchemaError(error)))
    )
  )
)

export const PlainInputLayer = Layer.effect(
  PlainInput,
  Effect.gen(function* () {
    const problems = yield* Problems
    return (httpEffect) =>
      Effect.gen(function* () {
        const route = yield* HttpRouter.RouteContext
        const query = yield* HttpServerRequest.ParsedSearchParams
        const refused = controlCharacterInput(route.params) ?? controlCharacterInput(query)
        return refused === undefined ? yield* httpEffect : problems.render(refused)
      })
  })
)

/** Bearer spend keys: KEY_REQUIRED without one, UNAUTHORIZED for unknown, revoked or suspended. */
export const authenticateSpendKey = Effect.fn("authenticateSpendKey")(function* (secret: string) {
  const accounts = yield* Accounts
  if (secret.length === 0) {
    return yield* new KeyRequired({
      message:
        "No key was sent. Mint a free trial key with POST /v1/keys/mint (no body, no auth) and send it as `Authorization: Bearer <key>`."
    })
  }
  if (!spendKeyPattern.test(secret)) {
    return yield* new Unauthorized({
      message: "The key is not a spend key of this service (expected svc_... or svc_trial_...)."
    })
  }
  const found = yield* Effect.orDie(accounts.findByKey(secret))
  if (found === undefined || found.key.revoked) {
    return yield* new Unauthorized({
      message: "This key is not active. Mint a new key or recover the account."
    })
  }
  if (found.account.state !== "active") {
    return yield* new Unauthorized({ message: "The account of this key is suspended." })
  }
  return found
})

export const SpendKeyAuthLayer = Layer.effect(
  SpendKeyAuth,
  Effect.gen(function* () {
    const problems = yield* Problems
    const accounts = yield* Accounts
    return SpendKeyAuth.of({
      bearer: (httpEffect, { credential, group }) =>
        Effect.gen(function* () {
          const ip = yield* ClientIp
          const found = yield* authenticateSpendKey(Redacted.value(credential)).pipe(
            Effect.provideService(Accounts, accounts),
            Effect.result
          )
          if (found._tag === "Failure") return problems.render(found.failure)
          const { account } = found.success
          // Entitlement precedes validation: a platform's group is named after the platform.
          const platform = platforms.find((p) => p === group.identifier)
          if (platform !== undefined && !account.entitlements.includes(platform)) {
            return problems.render(notEntitled(account, platform))
          }
          return yield* Effect.provideService(httpEffect, Caller, { ...found.success, ip })
        })
    })
  })
)
