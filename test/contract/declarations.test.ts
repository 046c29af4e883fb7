import { assert, describe, it } from "@effect/vitest"
import { declarations } from "../../src/contract/operations/index.ts"
import { operations } from "../../src/operations/registry.ts"

type Ids<T extends ReadonlyArray<{ readonly id: string }>> = { readonly [I in keyof T]: T[I]["id"] }
/** The registry lists the declared operations, in the same order (a mismatch fails the typecheck). */
const sameOrder: Ids<typeof operations> extends Ids<typeof declarations>
  ? Ids<typeof declarations> extends Ids<typeof operations>
    ? true
    : false
  : false = true

describe("the operation declarations", () => {
  it("are 17, each implemented once in the registry, in the same order", () => {
    assert.isTrue(sameOrder)
    assert.strictEqual(declarations.length, 17)
    assert.deepStrictEqual(
      operations.map((operation) => operation.id),
      declarations.map((declaration) => declaration.id)
    )
    declarations.forEach((declaration, i) => {
      const operation = operations[i]!
      for (const key of Object.keys(declaration) as Array<keyof typeof declaration>) {
        assert.strictEqual(operation[key], declaration[key], `${declaration.id}.${key}`)
      }
    })
  })

  it("have distinct ids, paths and envelope kinds, and say their price", () => {
    for (const field of ["id", "path", "kind"] as const) {
      const values = declarations.map((declaration) => declaration[field])
      assert.strictEqual(new Set(values).size, values.length, field)
    }
    for (const declaration of declarations) assert.isNotEmpty(declaration.price.summary, declaration.id)
  })

  it("have distinct short summaries (OpenAPI `summary`: a few words, no sentence)", () => {
    const summaries = declarations.map((declaration) => declaration.summary)
    assert.strictEqual(new Set(summaries).size, summaries.length)
    for (const summary of summaries) assert.match(summary, /^[A-Z][^.]{3,47}$/)
  })
})
