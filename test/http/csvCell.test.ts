import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { csvCell } from "../../src/surfaces/common/receiptCsv.ts"

/** The cell's text as a spreadsheet reads it back: unquoted, doubled quotes undone. */
const unquoted = (cell: string) => (cell.startsWith('"') ? cell.slice(1, -1).replaceAll('""', '"') : cell)

const signs = ["=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠", "\uFE62", "\uFE63", "\u2212"]
const spaces = [" ", "\u00A0", "\u3000", "\u2003", "\n", "\t", "\u200B", "\uFEFF", "\u2028"]

/** Audit 2: a formula sign after leading Unicode whitespace, or in full width, passed the defusing. */
describe("a CSV cell", () => {
  it("defuses a formula sign after any leading whitespace, in any of its forms", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...spaces), { maxLength: 4 }),
        fc.constantFrom(...signs),
        fc.string(),
        (lead, sign, rest) => {
          const text = `${lead.join("")}${sign}${rest}`
          assert.strictEqual(unquoted(csvCell(text)), `'${text}`)
        }
      )
    )
    for (const attack of [" =1+1", '\u00A0=HYPERLINK("x")', "＝1+1", "\u3000＠SUM(A1)", "－2", "\n=cmd"])
      assert.isTrue(unquoted(csvCell(attack)).startsWith("'"), JSON.stringify(attack))
  })

  it("leaves every other text as it was (quoted when it must be)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (text) => {
        fc.pre(
          !/^[\s\u200B-\u200D\u2060\uFEFF]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20\uFE62\uFE63\uFE66\u2212]/u.test(
            text
          )
        )
        assert.strictEqual(unquoted(csvCell(text)), text)
      })
    )
    assert.strictEqual(csvCell("rcpt_1"), "rcpt_1")
    assert.strictEqual(csvCell(" a b"), " a b")
    assert.strictEqual(csvCell(12), "12")
    assert.strictEqual(csvCell(null), "")
    assert.strictEqual(csvCell('say "hi", then'), '"say ""hi"", then"')
  })
})
