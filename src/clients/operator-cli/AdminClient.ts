import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Config, Context, Data, Effect, FileSystem, Layer, Option, Redacted } from "effect"
import {
  FetchHttpClient,
  HttpClient,
  HttpClientError,
  HttpClientRequest,
  type HttpClientResponse
} from "effect/http"
import { RpcClient, RpcSerialization } from "effect/rpc"
import type { RpcClientError } from "effect/rpc/RpcClientError"
import { AdminRpcs, adminRpcPath, adminTokenPath } from "../../contract/adminRpc.ts"

export class AdminTokenMissing extends Data.TaggedError("AdminTokenMissing")<{ readonly message: string }> {}

/** Where the CLI looks for the service when SVC_BASE_URL is unset: `npm start`'s address. */
export const defaultServiceUrl = "http://127.0.0.1:8787"

/** The service the CLI talks to: SVC_BASE_URL, else the default. */
export const serviceUrl = Config.String("SVC_BASE_URL").pipe(
  Config.withDefault(defaultServiceUrl),
  Config.map((url) => url.replace(/\/+$/, ""))
)

/** SVC_BASE_URL, and SVC_ADMIN_TOKEN or else the token file the service wrote next to its data. */
const connection = Effect.gen(function* () {
  const baseUrl = yield* serviceUrl
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

/**
 * The service refuses a request without the operator token at the HTTP layer (401 with a problem
 * body, before the RPC server reads it); the operator sees the problem's message.
 */
const refusedAsError = (response: HttpClientResponse.HttpClientResponse) =>
  response.status !== 401
    ? Effect.succeed(response)
    : Effect.flatMap(
        Effect.orElseSucceed(response.json, () => undefined),
        (body) =>
          Effect.fail(
            new HttpClientError.HttpClientError({
              reason: new HttpClientError.StatusCodeError({
                request: response.request,
                response,
                description:
                  (body as { readonly message?: string } | undefined)?.message ??
                  "The admin token was refused."
              })
            })
          )
      )

const refusalsExplained = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(HttpClient.HttpClient, HttpClient.transformResponse(Effect.flatMap(refusedAsError)))
).pipe(Layer.provide(FetchHttpClient.layer))

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
      Layer.provide([RpcSerialization.layerJson, refusalsExplained])
    )

  /** The client the CLI uses: SVC_BASE_URL and SVC_ADMIN_TOKEN (or the token file). */
  static readonly layer = Layer.unwrap(
    Effect.map(connection, ({ baseUrl, token }) => AdminClient.layerFor(baseUrl, token))
  )
}
