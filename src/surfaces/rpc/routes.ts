import { ByteSize, Effect, Layer } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest } from "effect/http"
import { RpcSerialization, RpcServer } from "effect/rpc"
import { AppConfig } from "../../config.ts"
import { AdminAuth, AdminRpcs, AdminUnauthorized, adminRpcPath } from "../../contract/adminRpc.ts"
import { Unauthorized } from "../../contract/errors.ts"
import { bearerCredential } from "../../identity/authorization.ts"
import { Bearers } from "../../identity/Bearers.ts"
import { AdminToken } from "../../services/AdminToken.ts"
import { asActor } from "../../services/Audit.ts"
import { announcedBodyTooLarge, bodyTooLarge } from "../common/limits.ts"
import { Problems } from "../common/problems.ts"
import { AdminHandlers } from "./handlers.ts"

/** Why a request without the operator token is refused: none was sent, or the one sent is not it. */
const refusal = (candidate: string | undefined): string =>
  candidate === undefined
    ? "Send the operator token as `Authorization: Bearer <admin token>`."
    : "The admin token is not valid."

/**
 * Refuses every procedure unless the call carries the operator token; never logs what was sent.
 * The route checks the token before it reads the body; this keeps the procedures refused on any
 * other transport the group is served over.
 */
export const AdminAuthLayer = Layer.effect(
  AdminAuth,
  Effect.gen(function* () {
    const token = yield* AdminToken
    return AdminAuth.of((effect, { headers, rpc }) => {
      const candidate = bearerCredential(headers.authorization)
      // Whatever an operator procedure changes is the operator's in the audit log.
      if (candidate !== undefined && token.check(candidate))
        return asActor({ kind: "operator", id: "operator" })(effect)
      const message = refusal(candidate)
      return Effect.logWarning(`admin RPC: refused ${rpc._tag}: ${message}`).pipe(
        Effect.andThen(Effect.fail(new AdminUnauthorized({ message })))
      )
    })
  })
)

const isBodyTooLarge = (error: unknown) =>
  typeof error === "object" &&
  error !== null &&
  "reason" in error &&
  (error.reason as { readonly reason?: string } | undefined)?.reason === "BodyTooLarge"

/**
 * `POST /admin/rpc`: the operator procedures as JSON RPC over HTTP, on the service's router.
 * A caller without the token gets 401 before a byte of the body is read; the body is then read
 * under the request body limit (PAYLOAD_TOO_LARGE above it, with or without Content-Length).
 */
export const AdminRpcRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const problems = yield* Problems
    const token = yield* AdminToken
    const bearers = yield* Bearers
    const rpc = yield* RpcServer.toHttpEffect(AdminRpcs)
    const limit = ByteSize.bytes(config.maxBodyBytes)

    yield* router.add(
      "POST",
      adminRpcPath,
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        // Wrong tokens are counted per client IP (OPERATOR_AUTH_FAILURES_PER_IP): RATE_LIMITED past them.
        const candidate = bearerCredential(request.headers.authorization)
        const checked =
          candidate === undefined
            ? undefined
            : yield* Effect.result(token.checkFrom(candidate, bearers.clientIp(request)))
        if (checked?._tag === "Failure") {
          yield* Effect.logWarning("admin RPC: refused: too many wrong tokens from this address")
          return problems.render(checked.failure)
        }
        if (checked === undefined || !checked.success) {
          const message = refusal(candidate)
          yield* Effect.logWarning(`admin RPC: refused: ${message}`)
          return problems.render(new Unauthorized({ message }))
        }
        const announced = announcedBodyTooLarge(request.headers, config.maxBodyBytes)
        if (announced !== undefined) return problems.render(announced)
        // Read once under the limit; the RPC server then reads the same cached body.
        const read = yield* request.arrayBuffer.pipe(
          Effect.provideService(HttpIncomingMessage.MaxBodySize, limit),
          Effect.result
        )
        if (read._tag === "Failure" && isBodyTooLarge(read.failure))
          return problems.render(bodyTooLarge(config.maxBodyBytes))
        return yield* rpc
      })
    )
  })
).pipe(Layer.provide([AdminHandlers, AdminAuthLayer, RpcSerialization.layerJson]))
