import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { summariseProfile } from "../../bench/profile.ts"

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
})
