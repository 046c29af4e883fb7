import { type Context, type Effect, Schema, SchemaAST } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { defaultHosts } from "../domain/identifiers/index.ts"
import { type Platform, platforms } from "../domain/plans.ts"
import { AppsGroup } from "./apps.ts"
import { AuditGroup } from "./audit.ts"
import { BillingGroup } from "./billing.ts"
import type { AnyDeclaration } from "./declaration.ts"
import { envelopeOf, ReceiptSchema } from "./envelope.ts"
import type { ErrorCode } from "./errors.ts"
import { answerExample, responseExamples } from "./examples/index.ts"
import { AuthGroup, ChildKeysGroup, ManagementGroup, SessionsGroup } from "./governance.ts"
import { IdempotencyKey } from "./idempotencyKey.ts"
import { Client, InputProblems, PlainInput, SpendKeyAuth } from "./middleware.ts"
import { errorsOf } from "./problemSchemas.ts"
import { MintResponse, ReceiptKeyId, ReceiptPage, Usage } from "./schemas.ts"
import { withUsageHeaders } from "./usageHeaders.ts"
import { ExportGroup, WebhooksGroup } from "./webhooks.ts"
import { namePaymentSignature, paymentSignatureDescription, withX402Headers } from "./x402Headers.ts"

export { Caller, Client, ClientIp, InputProblems, PlainInput, SpendKeyAuth } from "./middleware.ts"

/** An endpoint with its OpenAPI summary (a few words) and description. */
const described = <E extends { readonly annotateMerge: (annotations: Context.Context<never>) => E }>(
  summary: string,
  description: string,
  endpoint: E
): E => endpoint.annotateMerge(OpenApi.annotations({ summary, description }))

const ReceiptsQuery = Schema.toCodecStringTree(
  Schema.Struct({
    limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }))),
    cursor: Schema.optionalKey(Schema.String),
    key_id: Schema.optionalKey(ReceiptKeyId)
  })
)

export const KeysGroup = HttpApiGroup.make("keys", { topLevel: true })
  .annotate(OpenApi.Description, "Spend keys: mint a free trial key, no account needed.")
  .add(
    described(
      "Mint a free trial key",
      "Mint a free trial key. No authentication; rate limited per IP. The key is shown once.",
      HttpApiEndpoint.post("mintKey", "/keys/mint", {
        success: MintResponse,
        error: errorsOf("RATE_LIMITED", "PAYLOAD_TOO_LARGE", "INVALID_INPUT", "INTERNAL")
      })
    )
  )
  .middleware(PlainInput)

const freeCodes = ["INVALID_INPUT", "KEY_REQUIRED", "UNAUTHORIZED", "INTERNAL"] as const

/**
 * The contract's operationId is `get_usage` (as its MCP tool); the endpoint keeps the identifier
 * `getUsage`, which names the SDK's method (every SDK method is lowerCamelCase).
 */
const getUsage = described(
  "Plan, budget and spend",
  "Free. Plan, free-tier budget, balance, today's spend and 30 days of history.",
  HttpApiEndpoint.get("getUsage", "/usage", { success: Usage, error: errorsOf(...freeCodes) })
).annotate(OpenApi.Identifier, "get_usage")

const listReceipts = described(
  "List receipts",
  "Free. The account's receipts, newest first, cursor paged (limit 1 to 100, default 20); `key_id` narrows them to one key's. A child key sees only its own.",
  HttpApiEndpoint.get("listReceipts", "/receipts", {
    query: ReceiptsQuery,
    success: ReceiptPage,
    error: errorsOf(...freeCodes)
  })
)

const getReceipt = described(
  "Get one receipt",
  "Free. One receipt of the key's own account (a child key: one of its own calls).",
  HttpApiEndpoint.get("getReceipt", "/receipts/:id", {
    params: { id: Schema.String },
    success: ReceiptSchema,
    error: errorsOf("NOT_FOUND", ...freeCodes)
  })
)

const usageGroup = HttpApiGroup.make("usage", { topLevel: true }).annotate(
  OpenApi.Description,
  "The calling key's account: usage, budget and receipts. Free."
)

export const UsageGroup = usageGroup
  .add(getUsage, listReceipts, getReceipt)
  .middleware(PlainInput)
  .middleware(SpendKeyAuth)

/**
 * The usage group as the HttpApi serves it: without `GET /v1/usage`, which a wire adapter on the
 * router serves (`UsageRead`), as the data routes are. HttpApiBuilder provides its build context to
 * every request it serves, which copies the request fiber's context (every service) into a new Map:
 * 23 KB of that route's 70 KB (docs/performance.md round 12), and the route an agent polls.
 */
const ServedUsageGroup = usageGroup
  .add(listReceipts, getReceipt)
  .middleware(PlainInput)
  .middleware(SpendKeyAuth)

const apiAnnotations = OpenApi.annotations({
  title: "profnet, forum and microblog data API",
  version: "2.2",
  license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
  description:
    'Metered public data for AI agents. Every data call is quoted in credits and answered with a receipt. An optional parameter sent empty (`cursor=`, or `"cursor": ""` to an MCP tool) is read as absent.'
})

/** The routes that do not depend on the operation registry, with `usage` the group given. */
const baseApi = <U extends typeof UsageGroup | typeof ServedUsageGroup>(usage: U) =>
  HttpApi.make("svc")
    .add(KeysGroup)
    .add(usage)
    .add(AuthGroup)
    .add(SessionsGroup)
    .add(ManagementGroup)
    .add(ChildKeysGroup)
    .add(AppsGroup)
    .add(BillingGroup)
    .add(WebhooksGroup)
    .add(ExportGroup)
    .add(AuditGroup)
    .middleware(InputProblems)
    .middleware(Client)
    .prefix("/v1")
    .annotateMerge(apiAnnotations)

/** The routes that do not depend on the operation registry, as the contract states them. */
export class BaseApi extends baseApi(UsageGroup) {}

/** The same routes as the HttpApi serves them; their handlers are typed against it. */
export class ServedApi extends baseApi(ServedUsageGroup) {}

const MaxCredits = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }))

/** The common parameters of data calls (the resolve operations take only their URL and the header). */
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

/**
 * A data call's request headers: its Idempotency-Key, whether the answer's receipt is signed, and
 * the x402 payment of its retry.
 */
export const DataCallHeaders = Schema.Struct({
  "idempotency-key": Schema.optionalKey(IdempotencyKey).annotate({
    description: "Unique per logical call (UUID recommended). Required on paid keys."
  }),
  prefer: Schema.optionalKey(Schema.String).annotate({
    description:
      "`receipt-signature` (RFC 7240): the answer's receipt carries its `signature` (a JWS verifiable with /.well-known/jwks.json), and the answer says `Preference-Applied: receipt-signature`. Without it the receipt is unsigned; GET /v1/receipts/{id} always signs it."
  }),
  "payment-signature": Schema.optionalKey(Schema.String).annotate({
    description: paymentSignatureDescription
  })
})

/** An operation's query parameters: its own, and the common ones (none for a resolve). */
export const queryFields = (operation: AnyDeclaration): Schema.Struct.Fields =>
  operation.common ? { ...operation.params.fields, ...commonFields } : operation.params.fields

/** The query schema of an operation's REST route: its own parameters plus the common ones, read from strings. */
export const restQuerySchema = (operation: AnyDeclaration) =>
  Schema.toCodecStringTree(Schema.Struct(queryFields(operation)))

/** A query value with nothing in it: `cursor=` (or `cursor=&cursor=`). */
const isEmptyValue = (value: unknown) =>
  value === "" || (Array.isArray(value) && value.every((item) => item === ""))

/**
 * Reads a data call's parameters in their query-string form (REST's query, and MCP's arguments
 * turned into it) with the operation's REST schema. An optional parameter sent empty (`cursor=`,
 * `"cursor": ""`) is read as absent, as docs renderers, forms and agents send every parameter they
 * know, empty when unset; a required one sent empty is still refused by the schema.
 */
export const dataQueryDecoder = (operation: AnyDeclaration) => {
  const fields = queryFields(operation)
  const optional = new Set(Object.keys(fields).filter((name) => SchemaAST.isOptional(fields[name]!.ast)))
  const decode = Schema.decodeUnknownEffect(Schema.toCodecArrayFromSingle(restQuerySchema(operation))) as (
    input: unknown
  ) => Effect.Effect<Record<string, unknown>, Schema.SchemaError>
  return (query: Readonly<Record<string, unknown>>) => {
    let present: Record<string, unknown> | undefined
    for (const name in query)
      if (optional.has(name) && isEmptyValue(query[name])) {
        present ??= { ...query }
        delete present[name]
      }
    return decode(present ?? query)
  }
}

/** The codes every data operation can answer with; `QUOTE_EXCEEDS_MAX_CREDITS` only where `max_credits` is taken. */
const dataCodes = [
  "INVALID_INPUT",
  "KEY_REQUIRED",
  "UNAUTHORIZED",
  "AUTH_REQUIRED",
  "NOT_ENTITLED",
  "TRIAL_CAP_EXCEEDED",
  "RATE_LIMITED",
  "IDEMPOTENCY_KEY_REQUIRED",
  "IDEMPOTENCY_KEY_REUSED",
  "CONCURRENCY_LIMIT",
  "INSUFFICIENT_CREDITS",
  "BUDGET_EXHAUSTED",
  "NOT_FOUND",
  "PAYLOAD_TOO_LARGE",
  "UPSTREAM_UNAVAILABLE",
  "INTERNAL"
] as const satisfies ReadonlyArray<ErrorCode>

/** A data operation taking `freshness` and `max_credits`. */
const commonEndpoint = <D extends AnyDeclaration>(operation: D) =>
  HttpApiEndpoint.get(operation.id as D["id"], operation.path as D["path"], {
    query: Schema.Struct({ ...(operation.params.fields as D["params"]["fields"]), ...commonFields }),
    headers: DataCallHeaders,
    success: envelopeOf(operation.kind, operation.data as D["data"]),
    error: errorsOf(...dataCodes, "QUOTE_EXCEEDS_MAX_CREDITS")
  })

/** A resolve operation: its URL and the header only (the contract's "only `url` and the header"). */
const plainEndpoint = <D extends AnyDeclaration>(operation: D) =>
  HttpApiEndpoint.get(operation.id as D["id"], operation.path as D["path"], {
    query: Schema.Struct(operation.params.fields as D["params"]["fields"]),
    headers: DataCallHeaders,
    success: envelopeOf(operation.kind, operation.data as D["data"]),
    error: errorsOf(...dataCodes)
  })

/** The REST endpoint of a declaration, typed from it (distributes over a union of declarations). */
export type DataEndpoint<D extends AnyDeclaration> = D extends AnyDeclaration
  ? D["common"] extends true
    ? ReturnType<typeof commonEndpoint<D>>
    : ReturnType<typeof plainEndpoint<D>>
  : never

export const dataEndpoint = <D extends AnyDeclaration>(operation: D): DataEndpoint<D> =>
  // `common` picks the branch at run time exactly as `DataEndpoint` does at the type level.
  (operation.common ? commonEndpoint(operation) : plainEndpoint(operation)).pipe(
    (endpoint) => endpoint.annotate(OpenApi.Summary, operation.summary),
    (endpoint) => endpoint.annotate(OpenApi.Description, operation.description),
    (endpoint) => endpoint.annotate(OpenApi.Transform, documentOperation(operation))
  ) as unknown as DataEndpoint<D>

/**
 * The operation's OpenAPI object: parameters documented by their decoded types, its price, as its
 * 200 example the service's real answer to its request sample (`responseExamples`), and the usage
 * and x402 headers of its answers.
 */
const documentOperation = (operation: AnyDeclaration) => {
  const withQueryTypes = documentQueryTypes(operation)
  const example = responseExamples.data[operation.id]
  type Responses = Record<string, { readonly content?: Record<string, Record<string, unknown>> }>
  const withExample = (responses: Responses): Responses => {
    const ok = responses["200"]
    const json = ok?.content?.["application/json"]
    if (ok === undefined || json === undefined || example === undefined) return responses
    return {
      ...responses,
      "200": {
        ...ok,
        content: { ...ok.content, "application/json": { ...json, examples: answerExample(example) } }
      }
    }
  }
  return (spec: Record<string, unknown>) => ({
    ...withQueryTypes(spec),
    responses: withX402Headers(withUsageHeaders(withExample((spec.responses ?? {}) as Responses))),
    "x-price": operation.price.summary
  })
}

/**
 * A fresh UUID per logical call in practice. The docs' request samples carry one per operation, so
 * that trying several operations' samples with one paid key is not IDEMPOTENCY_KEY_REUSED (trying
 * the same sample again is a free replay).
 */
const idempotencyKeyExample = (operation: AnyDeclaration) => `docs-example-${operation.id}`

/**
 * The query codec reads strings, so the generated parameters say "string". Document each
 * parameter by its decoded type instead (integer bounds, enums, comma-separated lists), derived
 * when the OpenAPI document is made (its first request), not when the API is.
 */
const documentQueryTypes = (operation: AnyDeclaration) => {
  const fields = queryFields(operation)
  const typedOf = () =>
    Schema.toJsonSchemaDocument(Schema.toType(Schema.Struct(fields))).schema as {
      readonly properties?: Record<string, Record<string, unknown>>
    }
  const examples: Record<string, unknown> = { max_credits: 20, ...operation.examples }
  type Parameter = {
    readonly in?: string
    readonly name?: string
    readonly schema?: { readonly description?: string }
  }
  return (spec: Record<string, unknown>) => {
    const typed = typedOf()
    return {
      ...spec,
      parameters: ((spec.parameters ?? []) as ReadonlyArray<Parameter>).map((parameter) => {
        if (parameter.in === "header" && parameter.name === "idempotency-key")
          return { ...parameter, name: "Idempotency-Key", example: idempotencyKeyExample(operation) }
        if (parameter.in === "header" && parameter.name === "prefer") return { ...parameter, name: "Prefer" }
        if (parameter.in === "header") return namePaymentSignature(parameter)
        const schema = parameter.in === "query" ? typed.properties?.[parameter.name ?? ""] : undefined
        if (schema === undefined) return parameter
        const description = schema.description ?? parameter.schema?.description
        const list = schema.type === "array" ? { style: "form", explode: false } : {}
        const example = examples[parameter.name ?? ""]
        return {
          ...parameter,
          ...list,
          ...(description === undefined ? {} : { description }),
          ...(example === undefined ? {} : { example }),
          schema
        }
      })
    }
  }
}

/** The group of one platform's data operations, behind the spend-key middleware, under `/v1`. */
const platformGroup = <const P extends Platform, const E extends ReadonlyArray<HttpApiEndpoint.Constraint>>(
  platform: P,
  endpoints: readonly [E[number], ...Array<E[number]>]
) =>
  // Middleware order as on BaseApi (the first is innermost): the bearer check runs before the
  // parameters are checked and decoded.
  HttpApiGroup.make(platform, { topLevel: true })
    .annotate(OpenApi.Description, `Data from ${defaultHosts[platform]}, quoted in credits per call.`)
    .add(...endpoints)
    .middleware(PlainInput)
    .middleware(SpendKeyAuth)
    .middleware(InputProblems)
    .middleware(Client)
    .prefix("/v1")

export type PlatformGroup<P extends Platform, D extends AnyDeclaration> = ReturnType<
  typeof platformGroup<P, ReadonlyArray<DataEndpoint<Extract<D, { readonly platform: P }>>>>
>

type BaseGroups = typeof BaseApi extends HttpApi.HttpApi<string, infer Groups> ? Groups : never

/** The whole `/v1` contract for a registry of declarations, typed from them. */
export type Api<D extends AnyDeclaration> = HttpApi.HttpApi<
  "svc",
  BaseGroups | PlatformGroup<"profnet", D> | PlatformGroup<"forum", D> | PlatformGroup<"microblog", D>
>

export const makeApi = <const Operations extends ReadonlyArray<AnyDeclaration>>(
  operations: Operations
): Api<Operations[number]> => {
  const groups = platforms.flatMap((platform) => {
    const [first, ...rest] = operations
      .filter((operation) => operation.platform === platform)
      .map(dataEndpoint)
    return first === undefined ? [] : [platformGroup(platform, [first, ...rest])]
  })
  const [first, ...rest] = groups
  // Built group by group from the registry at run time; `Api` states the same groups by type (a
  // platform without operations has no group at run time and an empty one by type).
  return (first === undefined ? BaseApi : BaseApi.add(first, ...rest)) as unknown as Api<Operations[number]>
}
