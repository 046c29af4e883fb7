import { assert } from "@effect/vitest"

/** A 400 INVALID_INPUT naming `param`, with a message matching `pattern` when given. */
export const assertInvalid = (reply: { status: number; body: any }, param: string, pattern?: RegExp) => {
  assert.strictEqual(reply.status, 400, JSON.stringify(reply.body))
  assert.strictEqual(reply.body.code, "INVALID_INPUT")
  assert.strictEqual(reply.body.param, param)
  if (pattern !== undefined) assert.match(reply.body.message, pattern)
}

/** The operations of an OpenAPI document by operationId, each with its path. */
export const operationsById = (spec: any) =>
  new Map<string, any>(
    Object.entries(spec.paths).flatMap(([path, item]: [string, any]) =>
      Object.values(item).map((op: any) => [op.operationId, { ...op, path }] as const)
    )
  )
