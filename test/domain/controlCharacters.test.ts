import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { controlCharacterInput } from "../../src/contract/controlCharacters.ts"
import { controlCharacterIn, firstControlCharacter } from "../../src/domain/controlCharacters.ts"

const controls = [...Array.from({ length: 0x20 }, (_, code) => code), 0x7f].map((code) =>
  String.fromCharCode(code)
)
const printable = fc.string({ unit: fc.constantFrom(..."aZ09 _-.~%é€😀/:?&=") })

describe("control characters", () => {
  it("every C0 control and DEL is found, anywhere in the text, named by code point", () => {
    fc.assert(
      fc.property(printable, fc.constantFrom(...controls), printable, (before, control, after) => {
        const code = control.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")
        assert.strictEqual(firstControlCharacter(before + control + after), `U+${code}`)
      })
    )
  })

  it("printable text, including non-ASCII, passes", () => {
    fc.assert(fc.property(printable, (text) => assert.isUndefined(firstControlCharacter(text))))
    assert.isUndefined(firstControlCharacter("\u0080\u00a0\u2028"))
  })

  it("lists and JSON values are searched through", () => {
    assert.strictEqual(controlCharacterIn(["a", "b\u0000"]), "U+0000")
    assert.strictEqual(controlCharacterIn({ nested: ["\u001b"] }), "U+001B")
    assert.strictEqual(controlCharacterIn({ "bad\u0007key": "x" }), "U+0007")
    assert.isUndefined(controlCharacterIn([1, true, null, { a: "b" }]))
  })

  it("INVALID_INPUT names the first offending parameter, escaped when the name itself is hostile", () => {
    assert.isUndefined(controlCharacterInput({ a: "x", b: ["y", "z"] }))
    const refused = controlCharacterInput({ a: "fine", cursor: "x\u0000", later: "\u0001" })
    assert.strictEqual(refused?.param, "cursor")
    assert.match(refused?.message ?? "", /`cursor` contains a control character \(U\+0000\)/)
    assert.strictEqual(controlCharacterInput({ "k\u0000": "v" })?.param, "k\\u0000")
  })
})
