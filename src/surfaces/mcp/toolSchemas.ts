import {
  fromJsonSchema,
  type JsonSchemaType,
  type jsonSchemaValidator,
  type StandardSchemaWithJSON
} from "@modelcontextprotocol/server"
import { Schema } from "effect"
import { queryFields } from "../../contract/api.ts"
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
  description:
    "REST's Idempotency-Key: unique per logical call (UUID recommended). Required on paid keys. The same key with the same arguments, over MCP or REST, returns the stored result without charging again."
}

/** A tool's arguments: the operation's own parameters (decoded types), the common ones, and `idempotency_key`. */
export const toolInputJsonSchema = (operation: AnyOperation): JsonSchemaType => {
  const fields = queryFields(operation)
  const schema = jsonSchemaOf(Schema.toType(Schema.Struct(fields)))
  return { ...schema, properties: { ...schema.properties, idempotency_key: idempotencyKey } }
}

export const toolOutputJsonSchema = (operation: AnyOperation): JsonSchemaType =>
  jsonSchemaOf(envelopeOf(operation.kind, operation.data))

export const usageOutputJsonSchema: JsonSchemaType = jsonSchemaOf(Usage)

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
