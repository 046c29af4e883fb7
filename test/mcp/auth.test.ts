import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { mintRecipe, quotedStringSafe } from "../../src/surfaces/mcp/auth.ts"

/** RFC 6750 section 3: error_description = 1*( %x20-21 / %x23-5B / %x5D-7E ). */
const descriptionCharacters = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

describe("the 401 challenge's error_description", () => {
  it("keeps any text inside RFC 6750's quoted-string characters", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (text) => {
        assert.match(quotedStringSafe(text), descriptionCharacters)
      })
    )
    assert.strictEqual(quotedStringSafe('say "hi"\\\r\nthere\u00e9'), "say hi there")
  })

  it("carries the mint recipe unchanged", () => {
    const recipe = mintRecipe("https://api.example.test")
    assert.strictEqual(quotedStringSafe(recipe), recipe)
    assert.include(recipe, "curl -X POST https://api.example.test/v1/keys/mint")
    assert.include(recipe, "Authorization: Bearer <key>")
  })
})
