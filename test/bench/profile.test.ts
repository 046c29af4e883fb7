import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { summariseProfile } from "../../bench/profile.ts"
import { bundled } from "../../src/bundledStart.ts"

const dir = mkdtempSync(join(tmpdir(), "svc-profile-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("bench profile summary", () => {
  it("gives a frame of the bundled start back its module: package, folder and line within the module", () => {
    // A bundle as rolldown writes it: each module's code after a line naming its path.
    const bundleDir = join(dir, "node_modules", ".cache", "svc-start", "bundle", "b1")
    mkdirSync(bundleDir, { recursive: true })
    const bundle = join(bundleDir, "launch.js")
    writeFileSync(
      bundle,
      [
        "// \0rolldown/runtime.js",
        "var x = 1",
        "// node_modules/effect/dist/Effect.js",
        "function gen() {}",
        "function map() {}",
        "// src/metering/meterDataCall.ts",
        "function meter() {}",
        "function settle() {}"
      ].join("\n")
    )
    const url = pathToFileURL(bundle).href
    const frame = (id: number, functionName: string, lineNumber: number, children: Array<number> = []) => ({
      id,
      callFrame: { functionName, url, lineNumber },
      children
    })
    const profile = {
      // V8's line numbers count from 0.
      nodes: [
        { id: 1, callFrame: { functionName: "(root)", url: "", lineNumber: -1 }, children: [2] },
        frame(2, "settle", 7, [3]),
        frame(3, "map", 4)
      ],
      samples: [2, 3, 3, 3],
      timeDeltas: [0, 1000, 1000, 1000],
      startTime: 0,
      endTime: 4000
    }
    const file = join(dir, "p.cpuprofile")
    writeFileSync(file, JSON.stringify(profile))
    const summary = summariseProfile(file, { fromMs: 0, toMs: 10 })
    expect(summary.byArea.map((line) => line.name).sort()).toEqual(["effect/Effect.js", "src/metering"])
    expect(summary.topSelf.map((line) => line.name)).toContain("map node_modules/effect/dist/Effect.js:2")
    expect(summary.topSrcInclusive.map((line) => line.name)).toEqual([
      "settle src/metering/meterDataCall.ts:2"
    ])
  })

  it("gives a frame of a bundle made with its source map back its module's own line", {
    timeout: 120_000
  }, () => {
    // A small project bundled as the service is: its module's comments are gone from the bundle,
    // so only the map knows the line a function was written on.
    const root = join(dir, "project")
    mkdirSync(join(root, "src"), { recursive: true })
    symlinkSync(join(import.meta.dirname, "../../node_modules"), join(root, "node_modules"))
    writeFileSync(
      join(root, "src", "entry.ts"),
      `import { settle } from "./ledger.ts"\nexport const answer = settle(2)\n`
    )
    writeFileSync(
      join(root, "src", "ledger.ts"),
      [
        "/**",
        " * A comment the bundle drops.",
        " */",
        "",
        "export const settle = (n: number): number => n * 2",
        ""
      ].join("\n")
    )
    const made = bundled(
      root,
      join(root, "src", "entry.ts"),
      join(root, "node_modules", ".cache", "svc-start", "bundle")
    )
    expect(made).toBeDefined()
    const lines = readFileSync(fileURLToPath(made!.url), "utf8").split("\n")
    const line = lines.findIndex((text) => text.includes("const settle"))
    expect(line).toBeGreaterThanOrEqual(0)
    const column = lines[line]!.indexOf("(n)")
    const profile = {
      nodes: [
        { id: 1, callFrame: { functionName: "(root)", url: "", lineNumber: -1 }, children: [2] },
        {
          id: 2,
          callFrame: { functionName: "settle", url: made!.url, lineNumber: line, columnNumber: column }
        }
      ],
      samples: [2, 2],
      timeDeltas: [0, 1000],
      startTime: 0,
      endTime: 2000
    }
    const file = join(dir, "mapped.cpuprofile")
    writeFileSync(file, JSON.stringify(profile))
    const [top] = summariseProfile(file, { fromMs: 0, toMs: 10 }).topSelf
    // V8 counts lines from 0, the summary from 1: the function is on the module's fifth line.
    expect(top?.name).toMatch(/^settle .*\/project\/src\/ledger\.ts:5$/)
  })
})
