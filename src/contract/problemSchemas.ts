import { Schema, SchemaGetter } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { type ErrorCode, type ErrorOf, errorCatalog, errorClasses } from "./errors.ts"

/**
 * Each code's problem document as the wire carries it (RFC 9457 members, `code`, and the error's
 * own fields), decoding to the code's error class. Endpoints declare these, so OpenAPI documents
 * each code an operation can return and a typed client fails with the error class itself.
 *
 * The server renders problems itself (`toProblem`, with the configured links and offers); these
 * schemas' encoding side exists for completeness and writes relative `type`/`doc_url` links.
 */
const members = {
  type: Schema.String,
  title: Schema.String,
  status: Schema.Int,
  detail: Schema.String,
  is_retriable: Schema.Boolean,
  doc_url: Schema.String
}

/** What an error of one code looks like on the wire, and decodes to. */
export type ProblemSchema<C extends ErrorCode> = Schema.Codec<ErrorOf<C>, Record<string, unknown>>

const problemSchemaOf = <C extends ErrorCode>(code: C): ProblemSchema<C> => {
  const errorClass = errorClasses[code]
  const spec = errorCatalog[code]
  const { _tag: _, account: __, ...own } = errorClass.fields as Schema.Struct.Fields
  const wire: Schema.Top = Schema.Struct({ ...own, ...members, code: Schema.Literal(code) }).annotate({
    identifier: `Problem${errorClass.identifier}`,
    // The catalogue writes the service's address as {base_url}; a schema is the same for every deployment.
    description: `${code}: ${spec.title}. ${spec.next.replaceAll("{base_url}", "")}`
  })
  const ownNames = Object.keys(own)
  const pick = (from: unknown) => {
    const record = from as Record<string, unknown>
    return Object.fromEntries(
      ownNames.filter((name) => record[name] !== undefined).map((name) => [name, record[name]])
    )
  }
  const link = `/docs/errors#${code}`
  const schema = wire.pipe(
    Schema.decodeTo(errorClass as Schema.Top, {
      decode: SchemaGetter.transform((body: unknown) => ({ _tag: errorClass.identifier, ...pick(body) })),
      encode: SchemaGetter.transform((error: unknown) => ({
        type: link,
        title: spec.title,
        status: spec.status,
        detail: (error as { readonly message: string }).message,
        is_retriable: spec.retriable,
        doc_url: link,
        ...pick(error),
        code
      }))
    }),
    HttpApiSchema.asJson({ contentType: "application/problem+json" })
  )
  // The class's own schema is widened above to build the transformation generically; the wire is
  // built from that very class's fields, so decoding yields `ErrorOf<C>`.
  return schema.annotate({ httpApiStatus: spec.status }) as unknown as ProblemSchema<C>
}

export const problemSchemas: { readonly [C in ErrorCode]: ProblemSchema<C> } = {
  INVALID_INPUT: problemSchemaOf("INVALID_INPUT"),
  NOT_FOUND: problemSchemaOf("NOT_FOUND"),
  UNAUTHORIZED: problemSchemaOf("UNAUTHORIZED"),
  NOT_ENTITLED: problemSchemaOf("NOT_ENTITLED"),
  INSUFFICIENT_CREDITS: problemSchemaOf("INSUFFICIENT_CREDITS"),
  QUOTE_EXCEEDS_MAX_CREDITS: problemSchemaOf("QUOTE_EXCEEDS_MAX_CREDITS"),
  IDEMPOTENCY_KEY_REQUIRED: problemSchemaOf("IDEMPOTENCY_KEY_REQUIRED"),
  IDEMPOTENCY_KEY_REUSED: problemSchemaOf("IDEMPOTENCY_KEY_REUSED"),
  CONCURRENCY_LIMIT: problemSchemaOf("CONCURRENCY_LIMIT"),
  RATE_LIMITED: problemSchemaOf("RATE_LIMITED"),
  TRIAL_CAP_EXCEEDED: problemSchemaOf("TRIAL_CAP_EXCEEDED"),
  BUDGET_EXHAUSTED: problemSchemaOf("BUDGET_EXHAUSTED"),
  UPSTREAM_UNAVAILABLE: problemSchemaOf("UPSTREAM_UNAVAILABLE"),
  PAYLOAD_TOO_LARGE: problemSchemaOf("PAYLOAD_TOO_LARGE"),
  INTERNAL: problemSchemaOf("INTERNAL"),
  AUTH_REQUIRED: problemSchemaOf("AUTH_REQUIRED"),
  KEY_REQUIRED: problemSchemaOf("KEY_REQUIRED")
}

/** The problem schemas of the codes an endpoint can return, for its `error` declaration. */
export const errorsOf = <const Codes extends ReadonlyArray<ErrorCode>>(
  ...codes: Codes
): { readonly [K in keyof Codes]: ProblemSchema<Codes[K]> } =>
  // A tuple mapped element by element; TypeScript cannot follow `map` over a tuple type.
  codes.map((code) => problemSchemas[code]) as unknown as {
    readonly [K in keyof Codes]: ProblemSchema<Codes[K]>
  }
