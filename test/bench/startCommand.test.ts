import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { startCommand } from "../../bench/service.ts"

const dirs: Array<string> = []
const checkoutWith = (start: string) => {
  const dir = mkdtempSync(join(tmpdir(), "svc-start-command-"))
  dirs.push(dir)
  writeFileSync(join(dir, "package.json"), JSON.stringify({ scripts: { start } }))
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe("the bench runs the service as npm start does", () => {
  it("reads npm start's environment and Node's flags", () => {
    expect(
      startCommand(checkoutWith("MALLOC_ARENA_MAX=2 A_B=x=y node --heap-growing-percent=50 src/main.ts"))
    ).toEqual({
      env: { MALLOC_ARENA_MAX: "2", A_B: "x=y" },
      flags: ["--heap-growing-percent=50"]
    })
    expect(startCommand(checkoutWith("node src/main.ts"))).toEqual({ env: {}, flags: [] })
  })

  it("refuses a start script of another shape", () => {
    expect(() => startCommand(checkoutWith("tsx src/main.ts"))).toThrow(/npm start is not/)
    expect(() => startCommand(checkoutWith("node src/main.ts --port 1"))).toThrow(/npm start is not/)
  })

  it("this checkout's npm start sets malloc's arenas and its mmap threshold", () => {
    expect(startCommand(join(import.meta.dirname, "../..")).env).toEqual({
      MALLOC_ARENA_MAX: "2",
      MALLOC_MMAP_THRESHOLD_: "32768"
    })
  })
})
