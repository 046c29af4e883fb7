import { type Context, Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ManagementAuth } from "./governance.ts"
import { PlainInput } from "./middleware.ts"
import { errorsOf } from "./problemSchemas.ts"

/** Connected apps: MCP clients an account authorised by OAuth. */

const described = <E extends { readonly annotateMerge: (annotations: Context.Context<never>) => E }>(
  summary: string,
  description: string,
  endpoint: E
): E => endpoint.annotateMerge(OpenApi.annotations({ summary, description }))

const AccountId = Schema.String.annotate({
  description:
    "The account to act on, when the signed-in email governs several (AUTH_REQUIRED lists them). Query or body.",
  examples: ["acct_7Yq2mW9xK3pL5nR8tV1c"]
})
const AppId = Schema.String.check(Schema.isMaxLength(64)).annotate({
  description: "An app id from GET /v1/apps (app_...). Receipts of the app's calls carry it as their key.",
  examples: ["app_4kP9wQ2mX7nL3rT8vB1z"]
})
const Timestamp = Schema.String.annotate({
  description: "RFC 3339 time, UTC.",
  examples: ["2026-11-23T15:00:00.000Z"]
})

export const ConnectedApp = Schema.Struct({
  app_id: Schema.String,
  client_name: Schema.String,
  redirect_host: Schema.String,
  mounts: Schema.Array(Schema.String),
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp)
}).annotate({ identifier: "ConnectedApp" })

const codes = ["INVALID_INPUT", "AUTH_REQUIRED", "UNAUTHORIZED", "PAYLOAD_TOO_LARGE", "INTERNAL"] as const

export const AppsGroup = HttpApiGroup.make("apps", { topLevel: true })
  .annotate(OpenApi.Description, "MCP clients connected by OAuth. Management token only.")
  .add(
    described(
      "List connected apps",
      "The MCP clients the account authorised (sign-in and consent in a browser), with the MCP endpoints each may use.",
      HttpApiEndpoint.get("listApps", "/apps", {
        query: Schema.Struct({ account_id: Schema.optionalKey(AccountId) }),
        success: Schema.Struct({ account_id: Schema.String, apps: Schema.Array(ConnectedApp) }),
        error: errorsOf(...codes)
      })
    ),
    described(
      "Disconnect an app",
      "Every access and refresh token of the app stops working at once, on every instance.",
      HttpApiEndpoint.post("revokeApp", "/apps/revoke", {
        query: Schema.Struct({ account_id: Schema.optionalKey(AccountId) }),
        payload: Schema.Struct({ app_id: AppId, account_id: Schema.optionalKey(AccountId) }),
        success: Schema.Struct({ app_id: Schema.String, revoked_at: Timestamp }),
        error: errorsOf("NOT_FOUND", ...codes)
      })
    )
  )
  .middleware(PlainInput)
  .middleware(ManagementAuth)
