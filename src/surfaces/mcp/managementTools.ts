import type { JsonSchemaType, ToolAnnotations } from "@modelcontextprotocol/server"
import { Context, Effect, Option, Result, Schema } from "effect"
import { type HttpApiEndpoint, HttpApiError, OpenApi } from "effect/http-api"
import type { SqlError } from "effect/sql/SqlError"
import type { AppConfig } from "../../config.ts"
import type { Caller } from "../../contract/api.ts"
import { AuditGroup, AuditQuery } from "../../contract/audit.ts"
import { controlCharacterInput } from "../../contract/controlCharacters.ts"
import {
  AuthRequired,
  type InvalidInput,
  type NotEntitled,
  type NotFound,
  type RateLimited,
  type Unauthorized,
  type UpstreamUnavailable
} from "../../contract/errors.ts"
import { ChildKeysGroup, ManagementGroup } from "../../contract/governance.ts"
import type { Governor } from "../../domain/accounts.ts"
import type { Checkout } from "../../payments/Checkout.ts"
import type { PaymentRails } from "../../payments/PaymentRail.ts"
import { type Audit, asOrigin } from "../../services/Audit.ts"
import type { Ids } from "../../services/Ids.ts"
import type { Keys } from "../../services/Keys.ts"
import * as childKeys from "../common/childKeys.ts"
import * as management from "../common/management.ts"
import { invalidInputFromSchemaError } from "../common/problems.ts"
import { type Bearer, McpBearer } from "./bearer.ts"
import { toToolResult } from "./toolResults.ts"
import { compactJsonSchema, inputSchema, jsonSchemaOf, outputSchema } from "./toolSchemas.ts"
import type { McpTool } from "./tools.ts"

/**
 * Spec rule 7 over MCP: the management surface's routes as tools of a management token's
 * connection, on every mount. Arguments are the REST route's body (its query when it has no body),
 * results its body, both judged and shaped by the contract's own schemas.
 */

type Endpoint = HttpApiEndpoint.Top
/** The arguments of a route: its body's, or its query's when it takes no body. */
type Body<E extends Endpoint> = [E["~Payload"]] extends [never] ? E["~Query"]["Type"] : E["~Payload"]["Type"]

const bodyOf = <E extends Endpoint>(endpoint: E) =>
  ([...endpoint.payload.values()][0]?.schemas[0] ?? endpoint.query ?? Schema.Struct({})) as Schema.Codec<
    Body<E>,
    unknown
  >
const successOf = <E extends Endpoint>(endpoint: E) =>
  [...endpoint.success][0] as Schema.Codec<E["~Success"]["Type"], object>

const accountHelp =
  " `account_id` names the account when the sign-in governs several (AUTH_REQUIRED lists them)."

/** REST's body as arguments; `account_id` described without REST's "query or body". */
const argumentsJsonSchema = (schema: Schema.Top): JsonSchemaType => {
  const json = jsonSchemaOf(schema)
  const properties = json.properties as Record<string, object> | undefined
  if (properties?.account_id === undefined) return json
  const account_id = {
    ...properties.account_id,
    description: "The account to act on, when the signed-in email governs several (AUTH_REQUIRED lists them)."
  }
  return { ...json, properties: { ...properties, account_id } }
}

const notSignedIn = new AuthRequired({
  message:
    "Management tools need a management token (svcm_...): sign in with your email (POST /v1/auth/email/start) and connect with that token as bearer."
})

type ManagementStepServices = Keys | Checkout | PaymentRails | Audit
type ManagementServices = McpBearer | ManagementStepServices | AppConfig | Ids
type StepError =
  | AuthRequired
  | InvalidInput
  | NotEntitled
  | NotFound
  | RateLimited
  | Unauthorized
  | UpstreamUnavailable
  | SqlError

/**
 * A REST route of the account side as a tool: its body (or query) as arguments and its answer as
 * the result, both judged and shaped by the contract's own schemas; `run` acts as the connection's
 * bearer.
 */
const routeTool = <E extends Endpoint>(
  name: string,
  endpoint: E,
  annotations: ToolAnnotations,
  moreHelp: string,
  run: (
    bearer: Bearer,
    args: Body<E>
  ) => Effect.Effect<E["~Success"]["Type"], StepError, ManagementStepServices>,
  /** The arguments' schema when a query's text form is not what a tool takes (integers as text). */
  argumentsSchema: Schema.Codec<Body<E>, unknown> = bodyOf(endpoint)
): McpTool<ManagementServices> => {
  const decode = Schema.decodeUnknownEffect(argumentsSchema)
  const encode = Schema.encodeEffect(successOf(endpoint))
  const description = Option.getOrElse(Context.getOption(endpoint.annotations, OpenApi.Description), () => "")
  return {
    name,
    platform: undefined,
    description: `${description}${moreHelp}`,
    inputSchema: inputSchema(argumentsJsonSchema(argumentsSchema)),
    outputSchema: outputSchema(compactJsonSchema(jsonSchemaOf(successOf(endpoint)))),
    annotations: { openWorldHint: false, ...annotations },
    call: Effect.fn(`mcp.${name}`)(function* (args: Record<string, unknown> | undefined) {
      const bearer = yield* McpBearer
      // As on REST, a malformed body is answered before the account is chosen, and a control
      // character in any argument is refused as REST refuses it in a JSON body.
      const refused = controlCharacterInput(args ?? {})
      if (refused !== undefined) return yield* Effect.fail(refused)
      const body = yield* decode(args ?? {}).pipe(
        Effect.mapError((cause) =>
          invalidInputFromSchemaError(new HttpApiError.HttpApiSchemaError({ kind: "Body", cause }))
        )
      )
      const result = yield* run(bearer, body).pipe(Effect.catchTag("SqlError", Effect.die))
      return yield* Effect.orDie(encode(result))
    }, toToolResult)
  }
}

/** A management route as a tool of a management token's connection. */
const managementTool = <E extends Endpoint>(
  name: string,
  endpoint: E,
  annotations: ToolAnnotations,
  run: (
    governor: Governor,
    args: Body<E>
  ) => Effect.Effect<E["~Success"]["Type"], StepError, ManagementStepServices>,
  argumentsSchema?: Schema.Codec<Body<E>, unknown>
) =>
  routeTool(
    name,
    endpoint,
    annotations,
    accountHelp,
    ({ governor, ip }, args) =>
      governor === undefined
        ? Effect.fail(notSignedIn)
        : asOrigin({ actor: { kind: "email", id: governor.email }, ip })(run(governor, args)),
    argumentsSchema
  )

/** A child-key route as a tool of a spend key's connection: the key is the parent. */
const childKeyTool = <E extends Endpoint>(
  name: string,
  endpoint: E,
  annotations: ToolAnnotations,
  run: (
    caller: Caller["Service"],
    args: Body<E>
  ) => Effect.Effect<E["~Success"]["Type"], StepError, ManagementStepServices>
) =>
  routeTool(name, endpoint, annotations, "", ({ caller }, args) =>
    Result.isFailure(caller) ? Effect.fail(caller.failure) : run(caller.success, args)
  )

const endpoints = ManagementGroup.endpoints
const childEndpoints = ChildKeysGroup.endpoints

const changes = { readOnlyHint: false, destructiveHint: false, idempotentHint: false } as const

/** What a management token's connection tells its client beyond the data tools. */
export const managementInstructions =
  " This connection's management token also manages the account: list_keys, create_key, update_key (a key's spend cap, platforms and may_delegate), rotate_key, revoke_key, set_balance_alert, billing_portal and list_audit_events (who changed what, newest first). A new key's secret is shown once; pass `account_id` when the sign-in governs several accounts."

/** The management tools, built once: a management token's connection on every mount adds them. */
export const managementTools: ReadonlyArray<McpTool<ManagementServices>> = [
  managementTool("list_keys", endpoints.listKeys, { readOnlyHint: true }, management.listKeys),
  managementTool("create_key", endpoints.createKey, changes, management.createKey),
  managementTool(
    "update_key",
    endpoints.updateKey,
    { ...changes, idempotentHint: true },
    management.updateKey
  ),
  managementTool(
    "rotate_key",
    endpoints.rotateKey,
    { ...changes, destructiveHint: true },
    management.rotateKey
  ),
  managementTool(
    "revoke_key",
    endpoints.revokeKey,
    // A second revocation changes nothing (it answers the first one's time).
    { ...changes, destructiveHint: true, idempotentHint: true },
    management.revokeKey
  ),
  managementTool(
    "set_balance_alert",
    endpoints.setBalanceAlert,
    { ...changes, idempotentHint: true },
    management.setBalanceAlert
  ),
  // A new link each call; it changes nothing on the account.
  managementTool(
    "billing_portal",
    endpoints.billingPortal,
    { readOnlyHint: true, openWorldHint: true },
    management.billingPortal
  ),
  managementTool(
    "list_audit_events",
    AuditGroup.endpoints.listAuditEvents,
    { readOnlyHint: true },
    management.listAuditEvents,
    AuditQuery
  )
]

/**
 * The child-key tools, built once: a connection on `/mcp` whose bearer is a spend key its owner
 * lets delegate (`may_delegate`) hands a sub-agent a key bounded by its own (create_child_key),
 * lists (list_child_keys), changes (update_child_key) and revokes them.
 */
export const childKeyTools: ReadonlyArray<McpTool<ManagementServices>> = [
  childKeyTool("create_child_key", childEndpoints.createChildKey, changes, childKeys.createChildKey),
  childKeyTool("list_child_keys", childEndpoints.listChildKeys, { readOnlyHint: true }, (caller) =>
    childKeys.listChildKeys(caller)
  ),
  childKeyTool(
    "revoke_child_key",
    childEndpoints.revokeChildKey,
    { ...changes, destructiveHint: true, idempotentHint: true },
    childKeys.revokeChildKey
  ),
  childKeyTool(
    "update_child_key",
    childEndpoints.updateChildKey,
    { ...changes, idempotentHint: true },
    childKeys.updateChildKey
  )
]
