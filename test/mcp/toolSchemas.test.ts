import { assert, describe, it } from "@effect/vitest"
import { fromJsonSchema } from "@modelcontextprotocol/server"
import { defaultHosts } from "../../src/domain/identifiers/index.ts"
import { operations } from "../../src/operations/registry.ts"
import {
  outputSchema,
  toolOutputJsonSchema,
  usageOutputJsonSchema,
  validatesSynchronously
} from "../../src/surfaces/mcp/toolSchemas.ts"
import { registryTools } from "../../src/surfaces/mcp/tools.ts"

/** An output schema compiles at its first check, and then answers as `fromJsonSchema`'s does. */
describe("tool output schemas", () => {
  const schemas = [usageOutputJsonSchema, ...operations.map(toolOutputJsonSchema)]
  const values: ReadonlyArray<unknown> = [{}, { plan: "trial" }, [], "text", null, { kind: 1, data: {} }]

  it("are fromJsonSchema's, checked synchronously, with the same answers", () => {
    for (const schema of schemas) {
      const lazy = outputSchema(schema)["~standard"]
      const eager = fromJsonSchema(schema)["~standard"]
      assert.isTrue(validatesSynchronously(outputSchema(schema)))
      assert.strictEqual(lazy.version, eager.version)
      assert.strictEqual(lazy.vendor, eager.vendor)
      assert.deepStrictEqual(
        lazy.jsonSchema.output({ target: "draft-2020-12" }),
        eager.jsonSchema.output({ target: "draft-2020-12" })
      )
      assert.deepStrictEqual(
        lazy.jsonSchema.input({ target: "draft-2020-12" }),
        eager.jsonSchema.input({ target: "draft-2020-12" })
      )
      for (const value of values) assert.deepStrictEqual(lazy.validate(value), eager.validate(value))
    }
  })

  it("every registry tool's", () => {
    for (const tool of registryTools(operations, defaultHosts))
      assert.isTrue(validatesSynchronously(tool.outputSchema), tool.name)
  })
})
