import { Effect, Schema } from "effect"
import { HttpApiError } from "effect/http-api"
import { restQuerySchema } from "../../contract/api.ts"
import { controlCharacterInput } from "../../contract/controlCharacters.ts"
import type { InvalidInput } from "../../contract/errors.ts"
import type { CallRequest } from "../../metering/pipeline.ts"
import type { AnyOperation, Freshness } from "../../operations/Operation.ts"
import { invalidInputFromSchemaError } from "../common/problems.ts"

export type ToolCall = Omit<CallRequest, "caller">

/** A JSON argument in the form REST reads from the query string: scalars as text, lists comma-joined. */
const restValue = (value: unknown): unknown =>
  typeof value === "number" || typeof value === "boolean"
    ? String(value)
    : Array.isArray(value)
      ? value.map(restValue).join(",")
      : value

/**
 * Reads a tool call's JSON arguments with the very schema (and parse options) of the REST route,
 * so validation, defaults and INVALID_INPUT's `param` are the same on both surfaces.
 */
export const toolArgumentsDecoder = (operation: AnyOperation) => {
  const decode = Schema.decodeUnknownEffect(Schema.toCodecArrayFromSingle(restQuerySchema(operation))) as (
    query: unknown
  ) => Effect.Effect<Record<string, unknown>, Schema.SchemaError>
  return (args: Record<string, unknown>): Effect.Effect<ToolCall, InvalidInput> => {
    const { idempotency_key, ...rest } = args
    const query = Object.fromEntries(
      Object.entries(rest)
        .filter(([, value]) => value !== undefined)
        .map(([name, value]) => [name, restValue(value)])
    )
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
