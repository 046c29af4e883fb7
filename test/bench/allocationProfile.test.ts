import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { pathToFileURL } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { repoRoot } from "../../bench/proc.ts"
import { summariseAllocation } from "../../bench/profile.ts"

const dir = mkdtempSync(join(tmpdir(), "svc-allocation-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("the bench's allocation profile", () => {
  it("adds up a sampling heap profile a request, by area and by function", () => {
    const src = pathToFileURL(join(repoRoot, "src/metering/meterDataCall.ts")).href
    const frame = (functionName: string, url: string, lineNumber: number) => ({
      functionName,
      url,
      lineNumber
    })
    const file = join(dir, "synthetic.heapprofile")
    writeFileSync(
      file,
      JSON.stringify({
        head: {
          callFrame: frame("(root)", "", -1),
          selfSize: 0,
          children: [
            {
              callFrame: frame("meterDataCall", src, 9),
              selfSize: 2000,
              children: [
                {
                  callFrame: frame("nextTick", "node:internal/process/task_queues", 110),
                  selfSize: 1000,
                  children: []
                },
                // The same function again under another caller: one line.
                { callFrame: frame("meterDataCall", src, 9), selfSize: 1000, children: [] }
              ]
            }
          ]
        }
      })
    )
    const summary = summariseAllocation(file, 2)
    // 4,000 bytes over 2 requests: 1.95 KB a request.
    expect(summary.kbPerRequest).toBe(2)
    expect(summary.byArea).toEqual([
      { name: "src/metering", bytesPerRequest: 1500, percent: 75 },
      { name: "node internals", bytesPerRequest: 500, percent: 25 }
    ])
    expect(summary.topSelf[0]).toEqual({
      name: "meterDataCall src/metering/meterDataCall.ts:10",
      bytesPerRequest: 1500,
      percent: 75
    })
  })

  it("samples a process between two SIGUSR2s and writes the profile whole", async () => {
    const file = join(dir, "child.heapprofile")
    const child = spawn(
      process.execPath,
      [
        "--import",
        join(repoRoot, "bench/allocation-sampler.ts"),
        "-e",
        "const kept = []; setInterval(() => { for (let i = 0; i < 1000; i++) kept[i % 100] = { i, text: String(i * 7) } }, 1)"
      ],
      { env: { ...process.env, BENCH_HEAP_PROFILE_FILE: file }, stdio: "ignore" }
    )
    try {
      await sleep(500)
      child.kill("SIGUSR2")
      await sleep(500)
      child.kill("SIGUSR2")
      for (let waited = 0; !existsSync(file) && waited < 10_000; waited += 50) await sleep(50)
      const summary = summariseAllocation(file, 1)
      // Megabytes allocated and collected at once, against some KB kept: the profile counts what was
      // collected too (about 27 MB here; 24 KB when the sampler leaves collected objects out).
      expect(summary.kbPerRequest).toBeGreaterThan(1000)
      expect(summary.topSelf.length).toBeGreaterThan(0)
    } finally {
      child.kill("SIGKILL")
    }
  }, 30_000)
})
