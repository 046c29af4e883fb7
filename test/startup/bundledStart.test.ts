import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "vitest"
import { bundled } from "../../src/bundledStart.ts"

/**
 * A small project beside the real `node_modules`: an entry that imports a module with types, reads
 * a file beside itself through `import.meta.url`, and uses Effect (bundled, as the service's is).
 */
const root = mkdtempSync(join(tmpdir(), "svc-bundle-"))
symlinkSync(join(import.meta.dirname, "../../node_modules"), join(root, "node_modules"))
mkdirSync(join(root, "src", "lib"), { recursive: true })
const entry = join(root, "src", "entry.ts")
const cacheDir = join(root, "cache")
writeFileSync(
  entry,
  [
    `import { readFileSync } from "node:fs"`,
    `import { Effect } from "effect"`,
    `import { greeting } from "./lib/greeting.ts"`,
    `const beside: string = readFileSync(new URL("./lib/beside.txt", import.meta.url), "utf8")`,
    `export const answer = Effect.runSync(Effect.succeed(greeting("bundle") + " " + beside))`,
    `/** A comment — with a dash past Latin-1. */`,
    `export const arrow: string = "→"`
  ].join("\n")
)
const writeGreeting = (word: string) =>
  writeFileSync(
    join(root, "src", "lib", "greeting.ts"),
    `export const greeting = (name: string): string => \`${word}, \${name}\`\n`
  )
writeGreeting("hello")
writeFileSync(join(root, "src", "lib", "beside.txt"), "found")

afterAll(() => rmSync(root, { recursive: true, force: true }))

const answerOf = async (url: string): Promise<string> => ((await import(url)) as { answer: string }).answer

describe("the bundled start (src/bundledStart.ts)", { timeout: 120_000 }, () => {
  it("makes a bundle whose modules keep their own import.meta.url, then reuses it while their text is unchanged", async () => {
    const first = bundled(root, entry, cacheDir)
    assert.isDefined(first)
    assert.isTrue(first?.made)
    assert.strictEqual(await answerOf(first!.url), "hello, bundle found")
    // Its text, which V8 keeps for as long as the service runs, has no comments and is ASCII (V8
    // keeps a string with any character past Latin-1 at two bytes a character).
    const text = readFileSync(fileURLToPath(first!.url), "utf8")
    assert.notInclude(text, "A comment")
    assert.notMatch(text, /[\u0080-\uffff]/)
    assert.strictEqual(((await import(first!.url)) as { arrow: string }).arrow, "→")

    // Rewriting a module with the same text changes nothing: the bundle is kept by content.
    writeGreeting("hello")
    const again = bundled(root, entry, cacheDir)
    assert.deepStrictEqual(again, { url: first!.url, made: false })
  })

  it("makes a new one when a module it was made from changes, and leaves the old one to age out (a week)", async () => {
    const before = bundled(root, entry, cacheDir)
    writeGreeting("goodbye")
    const after = bundled(root, entry, cacheDir)
    assert.isTrue(after?.made)
    assert.notStrictEqual(after?.url, before?.url)
    assert.strictEqual(await answerOf(after!.url), "goodbye, bundle found")
    // A process started from the old one may still load its chunks: it stays until a week old.
    const made = () =>
      readdirSync(cacheDir)
        .filter((name) => name !== "manifest.json")
        .sort()
    assert.strictEqual(made().length, 2)
    const dirOf = (url: string) =>
      fileURLToPath(url)
        .slice(cacheDir.length + 1)
        .split("/")[0]!
    const eightDaysAgo = new Date(Date.now() - 8 * 24 * 60 * 60 * 1000)
    utimesSync(join(cacheDir, dirOf(before!.url)), eightDaysAgo, eightDaysAgo)
    writeGreeting("welcome")
    const third = bundled(root, entry, cacheDir)
    assert.strictEqual(await answerOf(third!.url), "welcome, bundle found")
    assert.deepStrictEqual(made(), [dirOf(after!.url), dirOf(third!.url)].sort())
  })

  it("keeps the service's own bundle at one byte a character", () => {
    // The bundler writes string literals in ASCII but leaves a template literal's text as it is
    // (a tag may read its raw text), so one character past Latin-1 in a page's template would
    // make V8 hold the whole bundle's text at two bytes a character: 2 MB more for as long as the
    // service runs (docs/performance-history.md, round 29). Such text is written as an entity or escape.
    const repo = fileURLToPath(new URL("../../", import.meta.url))
    const service = bundled(repo, join(repo, "src", "launch.ts"), join(root, "cache-service"))
    assert.isDefined(service)
    const text = readFileSync(fileURLToPath(service!.url), "utf8")
    const wide = [...text.matchAll(/[\u0100-\uffff]/g)].map(
      (found) =>
        `${JSON.stringify(found[0])} in ${JSON.stringify(text.slice(found.index - 60, found.index + 10))}`
    )
    assert.deepStrictEqual(wide, [])
  })

  it("gives none when the bundler fails or Node runs with source maps: the modules then load one by one", () => {
    const broken = join(root, "src", "broken.ts")
    writeFileSync(broken, `import { missing } from "./nowhere.ts"\nexport const x = missing\n`)
    assert.isUndefined(bundled(root, broken, join(root, "cache-broken")))

    process.setSourceMapsEnabled(true)
    try {
      assert.isUndefined(bundled(root, entry, cacheDir))
    } finally {
      process.setSourceMapsEnabled(false)
    }
  })
})
