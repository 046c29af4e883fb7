import { Schema } from "effect"

/** An Idempotency-Key's length (the contract's 8 to 128 characters): read from here only. */
export const idempotencyKeyLength = { min: 8, max: 128 } as const

/** The length in words, for messages. */
export const idempotencyKeyLengthText = `${idempotencyKeyLength.min} to ${idempotencyKeyLength.max} characters`

/**
 * An Idempotency-Key, as REST's header in the OpenAPI document, the MCP tools' `idempotency_key`
 * and the metering front door's check read it. The length counts UTF-16 units (JavaScript's
 * `length`); its JSON Schema states the same bounds, where Effect's own would halve the minimum
 * to allow for surrogate pairs.
 */
export const IdempotencyKey = Schema.String.check(
  Schema.isMinLength(idempotencyKeyLength.min, {
    toJsonSchema: () => ({ minLength: idempotencyKeyLength.min })
  }),
  Schema.isMaxLength(idempotencyKeyLength.max, {
    toJsonSchema: () => ({ maxLength: idempotencyKeyLength.max })
  })
)

/** True for a key of the contract's length (control characters are the front door's other check). */
export const hasIdempotencyKeyLength = Schema.is(IdempotencyKey)
