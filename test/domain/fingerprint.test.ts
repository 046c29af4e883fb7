import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { canonicalJson, fingerprint } from "../../src/domain/fingerprint.ts"

/** The plain statement of the rule: entries, minus the undefined ones, sorted by key, recursively. */
const reference = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  if (Array.isArray(value)) return `[${value.map(reference).join(",")}]`
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(",")}}`
}

/** JSON values, plus undefined fields (an optional parameter left out) and keys of any characters. */
const argsLike = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.string({ unit: "binary" }),
    fc.constant(undefined),
    fc.array(tie("value"), { maxLength: 5 }),
    fc.dictionary(fc.string({ unit: "binary", maxLength: 6 }), tie("value"), { maxKeys: 6 })
  )
})).value

describe("canonicalJson: the arguments an Idempotency-Key and the cache are keyed by", () => {
  it("is the sorted-entries rule, for any JSON-like arguments", () => {
    fc.assert(
      fc.property(argsLike, (value) => {
        assert.strictEqual(canonicalJson(value), reference(value))
      }),
      { numRuns: 2_000 }
    )
  })

  it("is the same for the same fields in any order and with undefined ones dropped", () => {
    assert.strictEqual(
      canonicalJson({ b: [1, { y: undefined, x: "é" }], a: undefined, c: null }),
      '{"b":[1,{"x":"é"}],"c":null}'
    )
    assert.strictEqual(
      canonicalJson({ c: null, b: [1, { x: "é" }] }),
      canonicalJson({ b: [1, { x: "é" }], c: null })
    )
  })

  it("fingerprints as SHA-256 of account, operation and canonical arguments", () => {
    const args = { args: { ref: { slug: "ada" }, sections: ["skills"] }, freshness: "recent" }
    assert.strictEqual(
      fingerprint("acct_1", "getProfile", args),
      createHash("sha256")
        .update(`acct_1\ngetProfile\n${reference(args)}`)
        .digest("hex")
    )
  })
})
