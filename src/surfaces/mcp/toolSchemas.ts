import {
  fromJsonSchema,
  type JsonSchemaType,
  type jsonSchemaValidator,
  type StandardSchemaWithJSON
} from "@modelcontextprotocol/server"
import { Schema } from "effect"
import { commonFields, queryFields } from "../../contract/api.ts"
import { envelopeOf } from "../../contract/envelope.ts"
import { IdempotencyKey } from "../../contract/idempotencyKey.ts"
import { Usage } from "../../contract/schemas.ts"
import type { AnyOperation } from "../../operations/Operation.ts"

/**
 * An Effect Schema as one self-contained JSON Schema object, its definitions as `$defs`. A root
 * that is only a reference (a schema with an `identifier`) is inlined: MCP wants an object root.
 */
export const jsonSchemaOf = (schema: Schema.Top): JsonSchemaType => {
  const document = Schema.toJsonSchemaDocument(schema)
  const defs = document.definitions
  const { $ref, ...rest } = document.schema as { $ref?: string }
  const root =
    $ref !== undefined && Object.keys(rest).length === 0
      ? defs[$ref.replace("#/$defs/", "")]
      : document.schema
  return (Object.keys(defs).length === 0 ? root : { ...root, $defs: defs }) as JsonSchemaType
}

/** REST's Idempotency-Key header as a tool argument, its length from the schema REST's header has. */
const idempotencyKey = {
  ...jsonSchemaOf(IdempotencyKey),
  description: "REST's Idempotency-Key; required on paid keys. See instructions."
}

/** What the server's instructions say once about `idempotency_key`, for every tool. */
export const idempotencyInstructions =
  "`idempotency_key` is REST's Idempotency-Key: unique per logical call (UUID recommended), required on paid keys; the same key with the same arguments, over MCP or REST, returns the stored result without charging again."

/** The common arguments' JSON Schemas, their descriptions said once in the instructions. */
const commonJsonSchemas = jsonSchemaOf(Schema.toType(Schema.Struct(commonFields))).properties as Record<
  string,
  { readonly description?: string }
>

/** What the server's instructions say once about the common arguments `freshness` and `max_credits`. */
export const commonInstructions = Object.entries(commonJsonSchemas)
  .map(([name, schema]) => `\`${name}\`: ${schema.description ?? ""}.`)
  .join(" ")
  .replaceAll("..", ".")

/**
 * A tool's arguments: the operation's own parameters (decoded types), the common ones, and
 * `idempotency_key`. Every constraint stays; the common arguments' long descriptions are in the
 * server's instructions, said once rather than on every tool.
 */
export const toolInputJsonSchema = (operation: AnyOperation): JsonSchemaType => {
  const fields = queryFields(operation)
  const schema = jsonSchemaOf(Schema.toType(Schema.Struct(fields)))
  const properties = Object.fromEntries(
    Object.entries(schema.properties ?? {}).map(([name, member]) =>
      name in commonJsonSchemas
        ? [name, { ...(member as object), description: "See instructions." }]
        : [name, member]
    )
  )
  return { ...schema, properties: { ...properties, idempotency_key: idempotencyKey } }
}

/** The complete envelope of an operation's answer, as REST's OpenAPI states it. */
export const fullOutputJsonSchema = (operation: AnyOperation): JsonSchemaType =>
  jsonSchemaOf(envelopeOf(operation.kind, operation.data))

type Node = {
  readonly type?: string | ReadonlyArray<string>
  readonly $ref?: string
  readonly enum?: ReadonlyArray<unknown>
  readonly required?: ReadonlyArray<string>
  readonly properties?: Record<string, Node>
  readonly $defs?: Record<string, Node>
}

/**
 * One level of a schema: its type and, for an object, its required member names; a `$ref` is
 * followed. It admits every value the schema admits (it only drops constraints), so it is never wrong.
 */
const shallow = (node: Node | undefined, defs: Record<string, Node>): JsonSchemaType => {
  const resolved = node?.$ref === undefined ? node : defs[node.$ref.replace("#/$defs/", "")]
  if (resolved?.type === undefined) return {} as JsonSchemaType
  return {
    type: resolved.type,
    ...(resolved.type === "object" && resolved.required !== undefined && resolved.required.length > 0
      ? { required: resolved.required }
      : {})
  } as JsonSchemaType
}

/** One level of a schema without its member names: its type. */
const typeOnly = (node: Node | undefined, defs: Record<string, Node>): JsonSchemaType => {
  const { type } = shallow(node, defs) as Node
  return (type === undefined ? {} : { type }) as JsonSchemaType
}

/**
 * A schema as the catalogue advertises it: the root's own constants (`kind`, `schema_version`) whole,
 * `data` one level deep (its type and required members), each other member by its type (the envelope's
 * members are described once in the instructions). The catalogue is read by the model at every turn: the envelope
 * is described once in the server's instructions, and REST's OpenAPI keeps the complete schema.
 */
export const compactJsonSchema = (full: JsonSchemaType): JsonSchemaType => {
  const root = full as Node
  const defs = root.$defs ?? {}
  const properties = Object.fromEntries(
    Object.entries(root.properties ?? {}).map(([name, member]) => [
      name,
      member.enum !== undefined ? member : name === "data" ? shallow(member, defs) : typeOnly(member, defs)
    ])
  )
  return {
    type: "object",
    properties,
    ...(root.required === undefined ? {} : { required: root.required })
  } as JsonSchemaType
}

/** A data tool's advertised output: its envelope, compacted. */
export const toolOutputJsonSchema = (operation: AnyOperation): JsonSchemaType =>
  compactJsonSchema(fullOutputJsonSchema(operation))

export const usageOutputJsonSchema: JsonSchemaType = compactJsonSchema(jsonSchemaOf(Usage))

export const noArguments: JsonSchemaType = { type: "object", properties: {}, additionalProperties: true }

/**
 * Tool arguments are advertised as JSON Schema but judged by the same Effect Schema REST uses, so
 * that an invalid argument is the same INVALID_INPUT problem (with its `param`) on both surfaces.
 */
const acceptAll: jsonSchemaValidator = {
  // The SDK's validator is generic in the data type; the arguments are judged later, by REST's schema.
  getValidator: () => (input) => ({ valid: true, data: input as never, errorMessage: undefined })
}

export const inputSchema = (schema: JsonSchemaType) =>
  fromJsonSchema<Record<string, unknown>>(schema, acceptAll)

/** Output schemas whose `validate` is known to answer synchronously without being called. */
const synchronous = new WeakSet<StandardSchemaWithJSON>()

/** True for an `outputSchema`: its validator (AJV's) is synchronous, compiled or not yet. */
export const validatesSynchronously = (schema: StandardSchemaWithJSON) => synchronous.has(schema)

/**
 * Structured results are checked against the advertised schema (the SDK's default validator,
 * `fromJsonSchema(schema)`). Compiling every tool's schema with AJV was a seventh of start-up, so a
 * schema is compiled at its first check; until then only its JSON Schema is read (`tools/list`).
 * The object is `fromJsonSchema`'s own (version, vendor, `jsonSchema`) with a deferred `validate`.
 */
export const outputSchema = (schema: JsonSchemaType): StandardSchemaWithJSON => {
  const advertised = fromJsonSchema(schema, acceptAll)["~standard"]
  let compiled: StandardSchemaWithJSON | undefined
  const lazy: StandardSchemaWithJSON = {
    "~standard": {
      ...advertised,
      validate: (value) => {
        compiled ??= fromJsonSchema(schema)
        return compiled["~standard"].validate(value)
      }
    }
  }
  synchronous.add(lazy)
  return lazy
}

/** A schema's members as text, nested objects in braces, optional ones marked `?`. */
const outline = (node: Node, defs: Record<string, Node>): string => {
  const resolved = node.$ref === undefined ? node : (defs[node.$ref.replace("#/$defs/", "")] ?? {})
  const items = (resolved as { items?: Node }).items
  if (resolved.type === "array" && items !== undefined) return `[${outline(items, defs)}]`
  if (resolved.properties === undefined) return ""
  const required = new Set(resolved.required ?? [])
  return `{${Object.entries(resolved.properties)
    .map(([name, member]) => `${name}${required.has(name) ? "" : "?"}${outline(member, defs)}`)
    .join(", ")}}`
}

/** The envelope every data tool answers with, described once (from its schema) in the instructions. */
export const envelopeInstructions = (() => {
  const full = jsonSchemaOf(envelopeOf("kind", Schema.Unknown)) as Node
  return `Every data tool's structuredContent is the envelope ${outline(full, full.$defs ?? {})}; \`data\` is the tool's own shape (its outputSchema names its members, REST's OpenAPI at /v1/openapi.json has it whole).`
})()
