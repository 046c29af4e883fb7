import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Config, Context, Data, Effect, FileSystem, Layer, Option, Redacted } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { RpcClient, RpcSerialization } from "effect/rpc"
import type { RpcClientError } from "effect/rpc/RpcClientError"
import { adminTokenPath } from "../../services/AdminToken.ts"
import { AdminRpcs, adminRpcPath } from "../rpc/AdminRpc.ts"

export class AdminTokenMissing extends Data.TaggedError("AdminTokenMissing")<{ readonly message: string }> {}

/** SVC_BASE_URL, and SVC_ADMIN_TOKEN or else the token file the service wrote next to its data. */
const connection = Effect.gen(function* () {
  const baseUrl = (yield* Config.String("SVC_BASE_URL").pipe(
    Config.withDefault("http://127.0.0.1:8787")
  )).replace(/\/+$/, "")
  const fromEnv = yield* Config.option(Config.Redacted("SVC_ADMIN_TOKEN"))
  if (Option.isSome(fromEnv)) return { baseUrl, token: fromEnv.value }
  const dataDir = yield* Config.String("DATA_DIR").pipe(Config.withDefault("./.data"))
  const url = new URL(baseUrl)
  const path = adminTokenPath(dataDir, Number(url.port || (url.protocol === "https:" ? 443 : 80)))
  const fs = yield* FileSystem.FileSystem
  const text = yield* fs.readFileString(path).pipe(
    Effect.mapError(
      () =>
        new AdminTokenMissing({
          message: `SVC_ADMIN_TOKEN is unset and ${path} cannot be read; set SVC_ADMIN_TOKEN (or DATA_DIR to the service's).`
        })
    )
  )
  return { baseUrl, token: Redacted.make(text.trim()) }
}).pipe(Effect.provide(NodeFileSystem.layer))

/** The operator procedures of a running service, over `POST /admin/rpc` with the admin bearer token. */
export class AdminClient extends Context.Service<
  AdminClient,
  RpcClient.FromGroup<typeof AdminRpcs, RpcClientError>
>()("cli/AdminClient") {
  /** A client of the service at `baseUrl`, sending `token` as the bearer. */
  static readonly layerFor = (baseUrl: string, token: Redacted.Redacted<string> | string) =>
    Layer.effect(AdminClient, RpcClient.make(AdminRpcs)).pipe(
      Layer.provide(
        RpcClient.layerProtocolHttp({
          url: `${baseUrl}${adminRpcPath}`,
          transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
        })
      ),
      Layer.provide([RpcSerialization.layerJson, FetchHttpClient.layer])
    )

  /** The client the CLI uses: SVC_BASE_URL and SVC_ADMIN_TOKEN (or the token file). */
  static readonly layer = Layer.unwrap(
    Effect.map(connection, ({ baseUrl, token }) => AdminClient.layerFor(baseUrl, token))
  )
}
