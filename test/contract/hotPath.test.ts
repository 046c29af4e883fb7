import { readFileSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { filesUnder } from "../support/sources.ts"

/**
 * The hot-path rule (src/metering/README.md, "Hot path"): a declaration tagged `// hot path` is
 * chained with `Effect.flatMap` and untraced: no generator (`function*`, `Effect.gen`) and no
 * traced `Effect.fn(` inside it. The tag stands on the line before the declaration; the
 * declaration ends at the next line indented no deeper than the tag that is not a closing bracket.
 */
const root = resolve(import.meta.dirname, "../..")

const tag = /^(\s*)\/\/ hot path\b/
const indentOf = (line: string) => line.length - line.trimStart().length

/** Each tagged declaration: where it is and its text. */
const taggedDeclarations = (text: string) => {
  const lines = text.split("\n")
  return lines.flatMap((line, at) => {
    const found = tag.exec(line)
    if (found === null) return []
    const depth = found[1]!.length
    const body: Array<string> = []
    for (let next = at + 1; next < lines.length; next++) {
      const candidate = lines[next]!
      const trimmed = candidate.trim()
      if (body.length > 0 && trimmed !== "" && indentOf(candidate) <= depth && !/^[)\]}]/.test(trimmed)) break
      body.push(candidate)
    }
    return [{ line: at + 1, body: body.join("\n") }]
  })
}

const forbidden = [/function\s*\*/, /Effect\.gen\(/, /Effect\.fn\(/]

describe("the hot path", () => {
  it("every declaration tagged `// hot path` is chained and untraced", () => {
    const tagged = filesUnder(join(root, "src")).flatMap((file) =>
      taggedDeclarations(readFileSync(file, "utf8")).map((found) => ({
        ...found,
        file: relative(root, file)
      }))
    )
    assert.isAtLeast(tagged.length, 10, "the tags are where the README says")
    const broken = tagged
      .filter(({ body }) => forbidden.some((pattern) => pattern.test(body)))
      .map(({ file, line }) => `${file}:${line}`)
    assert.deepStrictEqual(broken, [])
  })

  it("the check sees a generator inside a tagged declaration", () => {
    const text = [
      "// hot path",
      "const chained = (x: number) =>",
      "  Effect.flatMap(Effect.succeed(x), (y) => Effect.succeed(y + 1))",
      "",
      "// hot path",
      "const slow = Effect.gen(function* () {",
      "  return 1",
      "})",
      "const after = Effect.gen(function* () {})"
    ].join("\n")
    const found = taggedDeclarations(text)
    assert.strictEqual(found.length, 2)
    assert.isFalse(forbidden.some((pattern) => pattern.test(found[0]!.body)))
    assert.isTrue(forbidden.some((pattern) => pattern.test(found[1]!.body)))
    assert.notInclude(found[1]!.body, "after")
  })
})
