import { Effect, Layer } from "effect"
import { RpcSerialization, RpcServer } from "effect/rpc"
import { AdminToken } from "../../services/AdminToken.ts"
import { AdminAuth, AdminRpcs, AdminUnauthorized, adminRpcPath } from "./AdminRpc.ts"
import { AdminHandlers } from "./handlers.ts"

const bearer = /^Bearer\s+(\S+)\s*$/i

/** Refuses every procedure unless the call carries the operator token; never logs what was sent. */
export const AdminAuthLayer = Layer.effect(
  AdminAuth,
  Effect.gen(function* () {
    const token = yield* AdminToken
    return AdminAuth.of((effect, { headers, rpc }) => {
      const candidate = bearer.exec(headers.authorization ?? "")?.[1]
      if (candidate !== undefined && token.check(candidate)) return effect
      const message =
        candidate === undefined
          ? "Send the operator token as `Authorization: Bearer <admin token>`."
          : "The admin token is not valid."
      return Effect.logWarning(`admin RPC: refused ${rpc._tag}: ${message}`).pipe(
        Effect.andThen(Effect.fail(new AdminUnauthorized({ message })))
      )
    })
  })
)

/** `POST /admin/rpc`: the operator procedures as JSON RPC over HTTP, on the service's router. */
export const AdminRpcRoutes = RpcServer.layerHttp({
  group: AdminRpcs,
  path: adminRpcPath,
  protocol: "http"
}).pipe(Layer.provide([AdminHandlers, AdminAuthLayer, RpcSerialization.layerJson]))
