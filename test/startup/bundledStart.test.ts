import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
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
    `export const answer = Effect.runSync(Effect.succeed(greeting("bundle") + " " + beside))`
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

    // Rewriting a module with the same text changes nothing: the bundle is kept by content.
    writeGreeting("hello")
    const again = bundled(root, entry, cacheDir)
    assert.deepStrictEqual(again, { url: first!.url, made: false })
  })

  it("makes a new one when a module it was made from changes, and leaves the old one to age out", async () => {
    const before = bundled(root, entry, cacheDir)
    writeGreeting("goodbye")
    const after = bundled(root, entry, cacheDir)
    assert.isTrue(after?.made)
    assert.notStrictEqual(after?.url, before?.url)
    assert.strictEqual(await answerOf(after!.url), "goodbye, bundle found")
    // Another start may still load chunks of the old one: it stays until it is an hour old.
    assert.strictEqual(readdirSync(cacheDir).filter((name) => name !== "manifest.json").length, 2)
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
