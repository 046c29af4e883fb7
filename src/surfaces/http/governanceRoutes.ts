import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { BaseApi, Caller, ClientIp } from "../../contract/api.ts"
import type { ApiError } from "../../contract/errors.ts"
import { InvalidInput, Unauthorized } from "../../contract/errors.ts"
import { Governing } from "../../contract/governance.ts"
import type { Governor } from "../../domain/accounts.ts"
import { spendKeyPattern } from "../../domain/secrets.ts"
import { bearerCredential } from "../../identity/authorization.ts"
import { Bearers } from "../../identity/Bearers.ts"
import { ManagementTokens } from "../../services/ManagementTokens.ts"
import { Recovery } from "../../services/Recovery.ts"
import { SignIn } from "../../services/SignIn.ts"
import * as childKeys from "../common/childKeys.ts"
import * as management from "../common/management.ts"
import { Problems } from "../common/problems.ts"

/** Runs a governance step: its contract errors become problems, a store failure a defect (INTERNAL). */
export const answering =
  (problems: typeof Problems.Service) =>
  <A, E extends ApiError | { readonly _tag: "SqlError" }, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(
      Effect.catchIf(
        (error): error is Extract<E, { readonly _tag: "SqlError" }> => error._tag === "SqlError",
        Effect.die
      ),
      Effect.catch((error) => Effect.succeed(problems.render(error as ApiError)))
    )

/** `Authorization: Bearer <secret>` if the request has one. */
export const bearerOf = (request: HttpServerRequest.HttpServerRequest) =>
  bearerCredential(request.headers.authorization)

/** Email sign-in, command-line sign-in and recovery: no credential needed. */
export const AuthRoutes = HttpApiBuilder.group(BaseApi, "auth", (handlers) =>
  Effect.gen(function* () {
    const signIn = yield* SignIn
    const recovery = yield* Recovery
    const bearers = yield* Bearers
    const answer = answering(yield* Problems)
    /**
     * The spend key a sign-in call holds as bearer, which names the account a sign-in claims: a
     * claim needs the same key at start and at verify. A management token adds nothing, and so
     * does a child key: it is never a claimant (the sign-in goes on without a key).
     */
    const heldKeyId = Effect.gen(function* () {
      const bearer = bearerOf(yield* HttpServerRequest.HttpServerRequest)
      if (bearer === undefined || bearer.startsWith("svcm_")) return undefined
      if (!spendKeyPattern.test(bearer))
        return yield* new Unauthorized({
          message:
            "The bearer is not a spend key of this service; send none, or the key of the account to claim."
        })
      const { key } = yield* bearers.authenticate(bearer)
      return key.parentKeyId === undefined ? key.id : undefined
    })
    return handlers
      .handle("startEmailSignIn", ({ payload }) =>
        answer(
          Effect.gen(function* () {
            const ip = yield* ClientIp
            const keyId = yield* heldKeyId
            return yield* signIn.start({ email: payload.email, ip, keyId })
          })
        )
      )
      .handle("verifyEmailSignIn", ({ payload }) =>
        answer(
          Effect.gen(function* () {
            const keyId = yield* heldKeyId
            if (payload.token !== undefined)
              return yield* signIn.verifyLink({ token: payload.token, keyId, label: "web" })
            if (payload.email === undefined)
              return yield* new InvalidInput({
                message: "Send `email` and `code`, or the sign-in link's `token`.",
                param: "email"
              })
            if (payload.code === undefined)
              return yield* new InvalidInput({
                message: "Send the 6-digit `code` from the email.",
                param: "code"
              })
            return yield* signIn.verifyCode({
              email: payload.email,
              code: payload.code,
              ip: yield* ClientIp,
              keyId,
              label: "web"
            })
          })
        )
      )
      .handle("startDeviceSignIn", () =>
        answer(
          Effect.gen(function* () {
            return yield* signIn.startDevice(yield* ClientIp)
          })
        )
      )
      .handle("pollDeviceSignIn", ({ payload }) =>
        answer(
          Effect.gen(function* () {
            const outcome = yield* signIn.pollDevice(payload.device_code)
            if (!("error" in outcome)) return outcome
            return HttpServerResponse.jsonUnsafe(
              { error: outcome.error, error_description: deviceDescriptions[outcome.error] },
              { status: 400, headers: { "cache-control": "no-store" } }
            )
          })
        )
      )
      .handle("exchangeCode", ({ payload }) => answer(signIn.exchange(payload.code)))
      .handle("recover", ({ payload }) =>
        answer(
          Effect.gen(function* () {
            return yield* recovery.start({ email: payload.email, ip: yield* ClientIp })
          })
        )
      )
      .handle("rekey", ({ payload }) => answer(recovery.rekey(payload.token)))
  })
)

const deviceDescriptions = {
  authorization_pending:
    "Not approved yet: the person has not entered the code at verification_uri. Poll again after interval seconds.",
  slow_down: "Polling too fast: wait 5 seconds longer between polls from now on.",
  access_denied: "The person denied this sign-in.",
  expired_token: "The device code expired (10 minutes). Start again: POST /v1/auth/device.",
  invalid_grant: "This device code is unknown or was already used."
} as const

/** The signed-in email's management tokens. */
export const SessionsRoutes = HttpApiBuilder.group(BaseApi, "sessions", (handlers) =>
  Effect.gen(function* () {
    const managementTokens = yield* ManagementTokens
    const answer = answering(yield* Problems)
    return handlers
      .handle("listTokens", () =>
        answer(
          Effect.gen(function* () {
            const governor = yield* Governing
            return { email: governor.email, tokens: yield* managementTokens.list(governor) }
          })
        )
      )
      .handle("revokeToken", ({ payload }) =>
        answer(
          Effect.gen(function* () {
            return yield* managementTokens.revoke(yield* Governing, payload.token_id)
          })
        )
      )
      .handle("logout", () =>
        answer(
          Effect.gen(function* () {
            const governor = yield* Governing
            return yield* managementTokens.revoke(governor, governor.tokenId)
          })
        )
      )
  })
)

/** An account's keys, balance alert and billing portal, chosen by `account_id` (body, then query) or the only one. */
export const ManagementRoutes = HttpApiBuilder.group(BaseApi, "management", (handlers) =>
  Effect.gen(function* () {
    const answer = answering(yield* Problems)
    const governed = <A, E extends ApiError | { readonly _tag: "SqlError" }, R>(
      step: (governor: Governor) => Effect.Effect<A, E, R>
    ) =>
      answer(
        Effect.gen(function* () {
          return yield* step(yield* Governing)
        })
      )
    return handlers
      .handle("listKeys", ({ query }) => governed((governor) => management.listKeys(governor, query)))
      .handle("createKey", ({ payload, query }) =>
        governed((governor) =>
          management.createKey(governor, { ...payload, account_id: payload.account_id ?? query.account_id })
        )
      )
      .handle("updateKey", ({ payload, query }) =>
        governed((governor) =>
          management.updateKey(governor, { ...payload, account_id: payload.account_id ?? query.account_id })
        )
      )
      .handle("rotateKey", ({ payload, query }) =>
        governed((governor) =>
          management.rotateKey(governor, { ...payload, account_id: payload.account_id ?? query.account_id })
        )
      )
      .handle("revokeKey", ({ payload, query }) =>
        governed((governor) =>
          management.revokeKey(governor, { ...payload, account_id: payload.account_id ?? query.account_id })
        )
      )
      .handle("billingPortal", ({ query }) =>
        governed((governor) => management.billingPortal(governor, query))
      )
      .handle("setBalanceAlert", ({ payload, query }) =>
        governed((governor) =>
          management.setBalanceAlert(governor, {
            ...payload,
            account_id: payload.account_id ?? query.account_id
          })
        )
      )
  })
)

/** Child keys, made, listed, changed and revoked with the parent spend key as bearer. */
export const ChildKeysRoutes = HttpApiBuilder.group(BaseApi, "childKeys", (handlers) =>
  Effect.gen(function* () {
    const answer = answering(yield* Problems)
    const asCaller = <A, E extends ApiError | { readonly _tag: "SqlError" }, R>(
      step: (caller: Caller["Service"]) => Effect.Effect<A, E, R>
    ) => answer(Effect.flatMap(Caller, step))
    return handlers
      .handle("createChildKey", ({ payload }) =>
        asCaller((caller) => childKeys.createChildKey(caller, payload))
      )
      .handle("listChildKeys", () => asCaller(childKeys.listChildKeys))
      .handle("revokeChildKey", ({ payload }) =>
        asCaller((caller) => childKeys.revokeChildKey(caller, payload))
      )
      .handle("updateChildKey", ({ payload }) =>
        asCaller((caller) => childKeys.updateChildKey(caller, payload))
      )
  })
)
