import { existsSync, readdirSync, readFileSync } from "node:fs"
import { basename, dirname, join, relative, resolve } from "node:path"
import { assert, describe, it } from "@effect/vitest"

/**
 * Every repository path a document names exists. The documents: README.md, docs/**\/*.md and
 * src/**\/README.md. A path is a word that starts with one of the repository's top folders and a
 * slash (`src/metering/HitCharges.ts`), not preceded by a word character, a dot, a slash or a
 * hyphen (so `../src/...` in a link and `node_modules/...` are not read as one); a `#anchor` and
 * trailing dots are dropped, and a glob (`*`), a placeholder (`<name>`, `{id}`) or `NNNN` is not
 * checked. It exists when it is a file or folder, or the start of one's name
 * (`svc-start/bundle/`-style prefixes such as `test/pages/*.browser` read as `test/pages/`). `tools/`
 * (the tools package) is not a root: `tools/call` and `tools/list` are MCP's methods.
 *
 * Relative Markdown links (`[text](../src/metering/README.md#hot-path)`) resolve from the document
 * that holds them, and their anchors, and a document's own `#anchors`, name a heading of the
 * document they point to.
 */
const root = resolve(import.meta.dirname, "../..")

const markdownUnder = (folder: string, only?: string): Array<string> =>
  existsSync(folder)
    ? readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory()
          ? markdownUnder(join(folder, entry.name), only)
          : entry.name.endsWith(".md") && (only === undefined || entry.name === only)
            ? [join(folder, entry.name)]
            : []
      )
    : []

const documents = () => [
  join(root, "README.md"),
  ...markdownUnder(join(root, "docs")),
  ...markdownUnder(join(root, "src"), "README.md")
]

const roots = ["src", "test", "docs", "migrations", "bench", "scripts", "bin", ".ci"]
const pathPattern = new RegExp(
  `(?<![\\w./-])((?:${roots.map((name) => name.replace(".", "\\.")).join("|")})/[\\w./-]*\\w)`,
  "g"
)

/** The paths a text names, as the rule reads them. */
const namedPaths = (text: string): Array<string> =>
  [...text.matchAll(pathPattern)]
    .map((match) => match[1]!.split("#")[0]!.replace(/\.+$/, ""))
    .filter((path) => !/[*<>{}]|NNNN/.test(path))

/** A path exists as a file or folder, or as the start of a name in its folder. */
const exists = (base: string, path: string) => {
  const full = join(base, path)
  if (existsSync(full)) return true
  const folder = dirname(full)
  const start = basename(full)
  return existsSync(folder) && readdirSync(folder).some((name) => name.startsWith(start))
}

/** What a document names that is not in the repository at `base`. */
const missingPaths = (base: string, text: string) => namedPaths(text).filter((path) => !exists(base, path))

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-")

/** The anchors of a Markdown text's headings (outside code fences), a repeated one numbered. */
const anchorsOf = (text: string): Set<string> => {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  let fenced = false
  for (const line of text.split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading === null) continue
    const base = slug(heading[1]!)
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    anchors.add(count === 0 ? base : `${base}-${count}`)
  }
  return anchors
}

/** Relative links of a Markdown text, outside code fences: `[text](target)`. */
const linksOf = (text: string): Array<string> => {
  let fenced = false
  return text.split("\n").flatMap((line) => {
    if (/^\s*```/.test(line)) fenced = !fenced
    if (fenced) return []
    return [...line.matchAll(/\]\(([^)\s]+)\)/g)]
      .map((match) => match[1]!)
      .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("/"))
  })
}

/** The relative links of a document at `file` that lead nowhere: a missing file or heading. */
const brokenLinks = (file: string, text: string) =>
  linksOf(text).filter((target) => {
    const [path, anchor] = target.split("#") as [string, string | undefined]
    const linked = path === "" ? file : resolve(dirname(file), path)
    if (!existsSync(linked)) return true
    if (anchor === undefined || anchor === "" || !linked.endsWith(".md")) return false
    return !anchorsOf(readFileSync(linked, "utf8")).has(anchor)
  })

describe("the documents' paths", () => {
  it("every repository path named in README.md, docs/ and src/**/README.md exists", () => {
    const files = documents()
    assert.isAtLeast(files.length, 10, "README.md, docs/*.md and the folders' READMEs are read")
    const missing = files.flatMap((file) =>
      missingPaths(root, readFileSync(file, "utf8")).map((path) => `${relative(root, file)}: ${path}`)
    )
    assert.deepStrictEqual([...new Set(missing)].sort(), [])
  })

  it("every relative link and anchor in those documents leads to a file and a heading", () => {
    const broken = documents().flatMap((file) =>
      brokenLinks(file, readFileSync(file, "utf8")).map((target) => `${relative(root, file)}: ${target}`)
    )
    assert.deepStrictEqual(broken, [])
  })

  it("the rule reads paths as the documents write them", () => {
    const text = [
      "The front door is `src/metering/meterDataCall.ts` (docs/performance-history.md, round 22.)",
      "See src/metering/README.md#hot-path, `test/pages/*.browser.test.ts`, `src/operations/<platform>/<op>.ts`,",
      "`migrations/NNNN_name.sql`, `/checkout/{session_id}`, ../src/gone.ts and node_modules/src/gone.ts.",
      "Gone: `src/services/Ledger.ts`, bench/nothing-here.ts and .ci/none."
    ].join("\n")
    assert.deepStrictEqual(namedPaths(text), [
      "src/metering/meterDataCall.ts",
      "docs/performance-history.md",
      "src/metering/README.md",
      "test/pages",
      "src/operations",
      "src/services/Ledger.ts",
      "bench/nothing-here.ts",
      ".ci/none"
    ])
    assert.deepStrictEqual(missingPaths(root, text), [
      "src/services/Ledger.ts",
      "bench/nothing-here.ts",
      ".ci/none"
    ])
  })

  it("anchors are GitHub's, and a link to a missing heading is found", () => {
    const text =
      "# Accounts: sign-in, claim, keys, recovery\n```sh\n# not a heading\n```\n## Logs and start-up\n## Logs and start-up\n"
    assert.deepStrictEqual(
      [...anchorsOf(text)],
      ["accounts-sign-in-claim-keys-recovery", "logs-and-start-up", "logs-and-start-up-1"]
    )
    const file = join(root, "README.md")
    assert.deepStrictEqual(
      brokenLinks(
        file,
        "[a](#configuration) [b](docs/nowhere.md) [c](docs/storm.md#no-such) [d](https://x.test/y)"
      ),
      ["docs/nowhere.md", "docs/storm.md#no-such"]
    )
  })
})
