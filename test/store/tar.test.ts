import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { withoutEntries } from "../../src/store/tar.ts"

const list = (tar: Uint8Array) =>
  execFileSync("tar", ["-tf", "-"], { input: tar }).toString().trim().split("\n").sort()

describe("tar entries left out", () => {
  it("drops exactly the named files, and the rest reads back whole", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-tar-"))
    try {
      mkdirSync(join(dir, "sub"))
      writeFileSync(join(dir, "a.txt"), "a".repeat(700))
      writeFileSync(join(dir, "svc.lock"), "4242\n")
      writeFileSync(join(dir, "sub", "svc.lock"), "not the root one")
      writeFileSync(join(dir, "sub", "b.txt"), "b")
      const tar = new Uint8Array(
        execFileSync("tar", ["--format=ustar", "-cf", "-", "-C", dir, "a.txt", "svc.lock", "sub"])
      )
      const kept = withoutEntries(tar, new Set(["svc.lock"]))
      assert.deepStrictEqual(list(kept), ["a.txt", "sub/", "sub/b.txt", "sub/svc.lock"])
      assert.strictEqual(
        execFileSync("tar", ["-xOf", "-", "a.txt"], { input: kept }).toString(),
        "a".repeat(700)
      )
      assert.deepStrictEqual(list(withoutEntries(tar, new Set())), list(tar))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
