import { Context, Schema } from "effect"
import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "effect/http-api"
import { platforms } from "../domain/plans.ts"
import type { AnyOperation } from "../operations/Operation.ts"
import type { Account, KeyRecord } from "../services/Accounts.ts"
import { envelopeOf, ReceiptSchema } from "./envelope.ts"
import { type ErrorCode, type ErrorSpec, errorCatalog } from "./errors.ts"
import { ProblemBody } from "./problem.ts"
import { MintResponse, ReceiptPage, Usage } from "./schemas.ts"

/** The authenticated caller of a spend-key route. */
export class Caller extends Context.Service<
  Caller,
  { readonly key: KeyRecord; readonly account: Account; readonly ip: string }
>()("app/Caller") {}

/** Client IP of any route (socket, or trusted X-Forwarded-For). */
export class ClientIp extends Context.Service<ClientIp, string>()("app/ClientIp") {}

/** Problem responses for the OpenAPI document, one per status. */
export const problems = (...codes: ReadonlyArray<ErrorCode>) => {
  const statuses = new Set<ErrorSpec["status"]>(codes.map((code) => errorCatalog[code].status))
  return [...statuses].map((status) =>
    ProblemBody.pipe(HttpApiSchema.asJson({ contentType: "application/problem+json" })).annotate({
      httpApiStatus: status,
      description: codes.filter((code) => errorCatalog[code].status === status).join(", ")
    })
  )
}

export class SpendKeyAuth extends HttpApiMiddleware.Service<
  SpendKeyAuth,
  { provides: Caller; requires: ClientIp }
>()("app/SpendKeyAuth", { security: { bearer: HttpApiSecurity.bearer } }) {}

export class Client extends HttpApiMiddleware.Service<Client, { provides: ClientIp }>()("app/Client") {}

/** Turns request decoding failures into INVALID_INPUT problems naming the parameter. */
export class InputProblems extends HttpApiMiddleware.Service<InputProblems>()("app/InputProblems") {}

/**
 * Refuses control characters in path and query parameters (INVALID_INPUT naming the parameter).
 * Innermost on every group, so that as for any malformed parameter authentication answers first.
 */
export class PlainInput extends HttpApiMiddleware.Service<PlainInput>()("app/PlainInput") {}

export const KeysGroup = HttpApiGroup.make("keys", { topLevel: true })
  .add(
    HttpApiEndpoint.post("mintKey", "/keys/mint", {
      success: MintResponse,
      error: problems("RATE_LIMITED", "PAYLOAD_TOO_LARGE", "INTERNAL")
    }).annotate(
      OpenApi.Description,
      "Mint a free trial key. No authentication; rate limited per IP. The key is shown once."
    )
  )
  .middleware(PlainInput)

export const UsageGroup = HttpApiGroup.make("usage", { topLevel: true })
  .add(
    HttpApiEndpoint.get("get_usage", "/usage", {
      success: Usage,
      error: problems("KEY_REQUIRED", "UNAUTHORIZED", "INTERNAL")
    }).annotate(
      OpenApi.Description,
      "Free. Plan, free-tier budget, balance, today's spend and 30 days of history."
    )
  )
  .add(
    HttpApiEndpoint.get("listReceipts", "/receipts", {
      query: Schema.toCodecStringTree(
        Schema.Struct({
          limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }))),
          cursor: Schema.optionalKey(Schema.String)
        })
      ),
      success: ReceiptPage,
      error: problems("INVALID_INPUT", "KEY_REQUIRED", "UNAUTHORIZED", "INTERNAL")
    }).annotate(
      OpenApi.Description,
      "Free. The account's receipts, newest first, cursor paged (limit 1 to 100, default 20)."
    )
  )
  .add(
    HttpApiEndpoint.get("getReceipt", "/receipts/:id", {
      params: { id: Schema.String },
      success: ReceiptSchema,
      error: problems("NOT_FOUND", "KEY_REQUIRED", "UNAUTHORIZED", "INTERNAL")
    }).annotate(OpenApi.Description, "Free. One receipt of the key's own account.")
  )
  .middleware(PlainInput)
  .middleware(SpendKeyAuth)

const apiAnnotations = OpenApi.annotations({
  title: "profnet, forum and microblog data API",
  version: "2.2",
  description:
    "Metered public data for AI agents. Every data call is quoted in credits and answered with a receipt."
})

/** The routes that do not depend on the operation registry; their handlers are typed against it. */
export class BaseApi extends HttpApi.make("svc")
  .add(KeysGroup)
  .add(UsageGroup)
  .middleware(InputProblems)
  .middleware(Client)
  .prefix("/v1")
  .annotateMerge(apiAnnotations) {}

const MaxCredits = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }))

/** The common parameters of data calls (resolve operations take only their URL and the header). */
export const commonFields = {
  freshness: Schema.optionalKey(Schema.Literals(["recent", "realtime"])).annotate({
    description:
      "recent (default, cached up to 6 hours) or realtime (+2 credits, paid keys only; refunded on cached fallback)"
  }),
  max_credits: Schema.optionalKey(MaxCredits).annotate({
    description:
      "Spend ceiling for this call (integer). A higher quote is rejected with QUOTE_EXCEEDS_MAX_CREDITS and nothing is charged."
  })
}

export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optionalKey(Schema.String).annotate({
    description: "8 to 128 characters, unique per logical call (UUID recommended). Required on paid keys."
  })
})

/** The query schema of an operation's REST route: its own parameters plus the common ones, read from strings. */
export const restQuerySchema = (operation: AnyOperation) =>
  Schema.toCodecStringTree(
    Schema.Struct(
      operation.common ? { ...operation.params.fields, ...commonFields } : operation.params.fields
    )
  )

const dataErrors = problems(
  "INVALID_INPUT",
  "IDEMPOTENCY_KEY_REQUIRED",
  "UNAUTHORIZED",
  "AUTH_REQUIRED",
  "KEY_REQUIRED",
  "INSUFFICIENT_CREDITS",
  "QUOTE_EXCEEDS_MAX_CREDITS",
  "NOT_ENTITLED",
  "TRIAL_CAP_EXCEEDED",
  "NOT_FOUND",
  "IDEMPOTENCY_KEY_REUSED",
  "PAYLOAD_TOO_LARGE",
  "CONCURRENCY_LIMIT",
  "RATE_LIMITED",
  "INTERNAL",
  "UPSTREAM_UNAVAILABLE",
  "BUDGET_EXHAUSTED"
)

export const dataEndpoint = (operation: AnyOperation) =>
  HttpApiEndpoint.get(operation.id, operation.path, {
    query: restQuerySchema(operation),
    headers: IdempotencyHeaders,
    success: envelopeOf(operation.kind, operation.data),
    error: dataErrors
  })
    .annotate(OpenApi.Description, operation.description)
    .annotate(OpenApi.Transform, documentQueryTypes(operation))

/**
 * The query codec reads strings, so the generated parameters say "string". Document each
 * parameter by its decoded type instead (integer bounds, enums, comma-separated lists).
 */
const documentQueryTypes = (operation: AnyOperation) => {
  const fields: Schema.Struct.Fields = operation.common
    ? { ...operation.params.fields, ...commonFields }
    : operation.params.fields
  const typed = Schema.toJsonSchemaDocument(Schema.toType(Schema.Struct(fields))).schema as {
    readonly properties?: Record<string, Record<string, unknown>>
  }
  return (spec: Record<string, any>) => ({
    ...spec,
    parameters: (spec.parameters ?? []).map((parameter: Record<string, any>) => {
      if (parameter.in === "header" && parameter.name === "idempotency-key")
        return { ...parameter, name: "Idempotency-Key" }
      const schema = parameter.in === "query" ? typed.properties?.[parameter.name] : undefined
      if (schema === undefined) return parameter
      const description = schema.description ?? parameter.schema?.description
      const list = schema.type === "array" ? { style: "form", explode: false } : {}
      return { ...parameter, ...list, ...(description === undefined ? {} : { description }), schema }
    })
  })
}

/** One group per platform, derived from the operation registry. */
export const dataGroups = (operations: ReadonlyArray<AnyOperation>) =>
  platforms.flatMap((platform) => {
    const own = operations.filter((operation) => operation.platform === platform)
    if (own.length === 0) return []
    const group = own.reduce<HttpApiGroup.Top>(
      (acc, operation) => (acc as any).add(dataEndpoint(operation)),
      HttpApiGroup.make(platform, { topLevel: true }) as unknown as HttpApiGroup.Top
    )
    // Middleware order as on BaseApi (the first is innermost): the bearer check runs before the
    // parameters are checked and decoded.
    return [
      (group as any)
        .middleware(PlainInput)
        .middleware(SpendKeyAuth)
        .middleware(InputProblems)
        .middleware(Client)
        .prefix("/v1") as HttpApiGroup.Top
    ]
  })

/** The whole `/v1` contract for a registry. */
export const makeApi = (operations: ReadonlyArray<AnyOperation>) =>
  dataGroups(operations).reduce<typeof BaseApi>((api, group) => (api as any).add(group), BaseApi)
