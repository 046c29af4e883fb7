import { assert, describe, it } from "@effect/vitest"
import { openApiDocument } from "../../src/contract/openapi.ts"
import { declarations } from "../../src/contract/operations/index.ts"

describe("the OpenAPI document states the usage headers of every metered answer", () => {
  it("each data operation: the rate limit on every response, the credits and a key cap's remainder on its 200", () => {
    const spec = openApiDocument(declarations) as unknown as {
      readonly paths: Record<string, { readonly get: { readonly responses: Record<string, any> } }>
    }
    const data = Object.entries(spec.paths).filter(([path]) =>
      /^\/v1\/(profnet|forum|microblog)\//.test(path)
    )
    assert.strictEqual(data.length, declarations.length)
    for (const [path, item] of data) {
      const responses = Object.entries(item.get.responses)
      assert.isAbove(responses.length, 1, path)
      for (const [status, response] of responses) {
        const names = Object.keys(response.headers ?? {})
        assert.includeMembers(names, ["RateLimit-Policy", "RateLimit"], `${path} ${status}`)
        if (status === "200")
          assert.includeMembers(names, ["Credits-Charged", "Credits-Remaining", "Key-Cap-Remaining"], path)
        else assert.notInclude(names, "Credits-Charged", `${path} ${status}: nothing is charged on a problem`)
      }
    }
    // Other routes are not metered: no usage headers.
    const keys = (spec.paths["/v1/keys"] as unknown as { get: { responses: Record<string, any> } }).get
      .responses
    assert.isUndefined(keys["200"].headers?.RateLimit)
  })
})
