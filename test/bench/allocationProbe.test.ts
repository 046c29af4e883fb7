import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type AllocationWindow, windowOf } from "../../bench/allocation-probe.ts"

const probe = join(import.meta.dirname, "..", "..", "bench", "allocation-probe.ts")

/**
 * A process under the probe that allocates what it is told on stdin (a line with a number of MB,
 * as short-lived small arrays, as a request's objects are) and answers "done" on stdout.
 */
const child = `
process.stdin.setEncoding("utf8")
const ring = new Array(1024)
let i = 0
process.stdin.on("data", (line) => {
  const mb = Number(line.trim())
  let left = mb * 1024 * 1024
  while (left > 0) {
    ring[i++ & 1023] = new Array(30).fill(left)
    left -= 8 * 30 + 16
  }
  process.stdout.write("done\\n")
})
process.stdout.write("ready\\n")
`

describe("the bench's allocation probe", () => {
  it("adds what each collection found allocated since the last one left", () => {
    const record = (gcType: string, before: number, after: number, cost = 100) => ({
      gcType,
      cost,
      beforeGC: { heapStatistics: { usedHeapSize: before } },
      afterGC: { heapStatistics: { usedHeapSize: after } }
    })
    const window = windowOf(
      10,
      [record("Scavenge", 50, 20), record("Scavenge", 60, 25, 250), record("MarkSweepCompact", 40, 5)],
      12
    )
    // 40 before the first, 40 before the second, 15 before the third, 7 after it.
    assert.deepStrictEqual(window, {
      allocatedBytes: 102,
      scavenges: 2,
      markCompacts: 1,
      gcPauseUs: 450,
      longestGcPauseUs: 250
    })
  })

  it.effect(
    "counts the bytes a process allocates in a window, collected or not, and nothing outside one",
    () =>
      Effect.promise(async () => {
        const dir = mkdtempSync(join(tmpdir(), "allocation-probe-"))
        const file = join(dir, "window.json")
        const process_ = spawn(process.execPath, ["--import", probe, "-e", child], {
          env: { ...process.env, BENCH_ALLOCATION_FILE: file },
          stdio: ["pipe", "pipe", "inherit"]
        })
        const lines: Array<string> = []
        let waiting: (() => void) | undefined
        process_.stdout.setEncoding("utf8")
        process_.stdout.on("data", (text: string) => {
          lines.push(...text.split("\n").filter((line) => line.length > 0))
          waiting?.()
        })
        const next = async (expected: string) => {
          while (lines.length === 0) await new Promise<void>((resolve) => (waiting = resolve))
          assert.strictEqual(lines.shift(), expected)
        }
        const window = async (mb: number): Promise<AllocationWindow> => {
          rmSync(file, { force: true })
          process_.kill("SIGUSR2")
          // The signal and stdin are separate events of the child's loop: the window opens first.
          await new Promise((resolve) => setTimeout(resolve, 200))
          process_.stdin.write(`${mb}\n`)
          await next("done")
          process_.kill("SIGUSR2")
          for (let i = 0; i < 250 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 20))
          return JSON.parse(readFileSync(file, "utf8")) as AllocationWindow
        }
        try {
          await next("ready")
          // Outside a window: nothing is counted for it.
          process_.stdin.write("64\n")
          await next("done")
          const many = await window(256)
          const few = await window(0)
          const mb = (bytes: number) => bytes / 1024 / 1024
          // 256 MB of garbage goes through many scavenges: counted from them, not from the heap's end.
          assert.isAbove(many.scavenges, 2)
          assert.isAbove(mb(many.allocatedBytes), 230)
          assert.isBelow(mb(many.allocatedBytes), 400)
          assert.isBelow(mb(few.allocatedBytes), 4)
          // The 256 MB were allocated in one turn of the loop, which was that late for whatever was due.
          assert.isAbove(many.loopDelayMaxMs ?? 0, 20)
          assert.isAbove(many.longestGcPauseUs, 0)
          assert.isAtMost(many.longestGcPauseUs, many.gcPauseUs)
        } finally {
          process_.kill("SIGKILL")
          rmSync(dir, { recursive: true, force: true })
        }
      }),
    30000
  )
})
