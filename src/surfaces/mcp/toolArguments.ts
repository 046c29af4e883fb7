import { Effect } from "effect"
import { HttpApiError } from "effect/http-api"
import { dataQueryDecoder } from "../../contract/api.ts"
import { controlCharacterInput } from "../../contract/controlCharacters.ts"
import { InvalidInput } from "../../contract/errors.ts"
import type { CallInput } from "../../metering/meterDataCall.ts"
import type { AnyOperation, Freshness } from "../../operations/Operation.ts"
import { invalidInputFromSchemaError } from "../common/problems.ts"
import { toolInputJsonSchema } from "./toolSchemas.ts"

/** A JSON argument in the form REST reads from the query string: scalars as text, lists comma-joined. */
const restValue = (value: unknown): unknown =>
  typeof value === "number" || typeof value === "boolean"
    ? String(value)
    : Array.isArray(value)
      ? value.map(restValue).join(",")
      : value

/** The advertised JSON type of each argument, or of its items for a list. */
const argumentTypes = (operation: AnyOperation): Record<string, string | undefined> => {
  const properties = (toolInputJsonSchema(operation).properties ?? {}) as Record<
    string,
    { type?: string; items?: { type?: string } }
  >
  return Object.fromEntries(
    Object.entries(properties).map(([name, schema]) => [
      name,
      schema.type === "array" ? schema.items?.type : schema.type
    ])
  )
}

/**
 * A number or boolean where a string is advertised is refused rather than stringified: a tweet id
 * sent as a JSON number has already lost its last digits. Integer and boolean arguments still take
 * JSON scalars, which REST's schema reads as it reads query text.
 */
const notText = (name: string, value: unknown, expected: string | undefined): InvalidInput | undefined => {
  if (expected !== "string") return undefined
  const values = Array.isArray(value) ? value : [value]
  const wrong = values.find((item) => typeof item !== "string")
  if (wrong === undefined) return undefined
  return new InvalidInput({
    message: `Invalid \`${name}\`: expected a string, got ${wrong === null ? "null" : typeof wrong}. Send it as JSON text (a long id as a number loses digits).`,
    param: name
  })
}

/**
 * Reads a tool call's JSON arguments with the very schema (and parse options) of the REST route,
 * so validation, defaults and INVALID_INPUT's `param` are the same on both surfaces.
 */
export const toolArgumentsDecoder = (operation: AnyOperation) => {
  const decode = dataQueryDecoder(operation)
  const types = argumentTypes(operation)
  return (args: Record<string, unknown>): Effect.Effect<CallInput, InvalidInput> => {
    const present = Object.entries(args).filter(([, value]) => value !== undefined)
    for (const [name, value] of present) {
      const refused = notText(name, value, types[name])
      if (refused !== undefined) return Effect.fail(refused)
    }
    const { idempotency_key, ...rest } = Object.fromEntries(present)
    const query = Object.fromEntries(Object.entries(rest).map(([name, value]) => [name, restValue(value)]))
    // The same refusal as REST's path and query parameters (the idempotency key is the pipeline's).
    const refused = controlCharacterInput(query)
    if (refused !== undefined) return Effect.fail(refused)
    return decode(query).pipe(
      Effect.mapError((cause) =>
        invalidInputFromSchemaError(new HttpApiError.HttpApiSchemaError({ kind: "Query", cause }))
      ),
      Effect.map(({ freshness, max_credits, ...params }) => ({
        params,
        freshness: (freshness as Freshness | undefined) ?? "recent",
        maxCredits: max_credits as number | undefined,
        idempotencyKey: idempotency_key === undefined ? undefined : String(restValue(idempotency_key))
      }))
    )
  }
}
