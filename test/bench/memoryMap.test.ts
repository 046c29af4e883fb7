import { describe, expect, it } from "vitest"
import { residentParts, residentPartsLine, residentPartsOf } from "../../bench/memoryMap.ts"
import { statusKb } from "../../bench/proc.ts"

const node = "/opt/node/bin/node"

/** One mapping of `/proc/<pid>/smaps`: its head line and the lines after it that matter here. */
const mapping = (start: number, end: number, perms: string, path: string, rssKb: number) =>
  [
    `${start.toString(16)}-${end.toString(16)} ${perms} 00000000 00:00 0 ${path}`.trimEnd(),
    `Size:           ${(end - start) / 1024} kB`,
    `Rss:            ${rssKb} kB`,
    "Pss:            0 kB"
  ].join("\n")

const MiB = 1024 * 1024
const GiB = 1024 * MiB
const base = 0x7f00_0000_0000 // 64 MiB-aligned

describe("bench: what a process's resident memory is made of", () => {
  const smaps = [
    mapping(0x400000, 0x400000 + 10 * MiB, "r--p", node, 7 * 1024),
    mapping(0x400000 + 10 * MiB, 0x400000 + 40 * MiB, "r-xp", node, 25 * 1024),
    mapping(0x4000000, 0x4000000 + 30 * MiB, "rw-p", "[heap]", 30 * 1024),
    // a thread's arena: 20 MiB read-write at a 64 MiB boundary, the rest of its 64 MiB reserved
    mapping(base, base + 20 * MiB, "rw-p", "", 18 * 1024),
    mapping(base + 20 * MiB, base + 64 * MiB, "---p", "", 0),
    // a WebAssembly memory: 2 GiB of guard before, 128 MiB, then more than 4 GiB of guard
    mapping(base + 64 * MiB, base + 64 * MiB + 2 * GiB, "---p", "", 0),
    mapping(base + 64 * MiB + 2 * GiB, base + 192 * MiB + 2 * GiB, "rw-p", "", 33 * 1024),
    mapping(base + 192 * MiB + 2 * GiB, base + 192 * MiB + 12 * GiB, "---p", "", 0),
    // V8's heap pages in its reservation: read-write followed by less than 4 GiB reserved, and a
    // page that starts on a 64 MiB boundary without being an arena
    mapping(base + 16 * GiB, base + 16 * GiB + 1 * MiB, "rw-p", "", 1024),
    mapping(base + 16 * GiB + 1 * MiB, base + 19 * GiB, "---p", "", 0),
    mapping(base + 20 * GiB, base + 20 * GiB + 40 * MiB, "rw-p", "", 40 * 1024),
    mapping(base + 21 * GiB, base + 21 * GiB + 12 * MiB, "rwxp", "", 12 * 1024),
    mapping(base + 22 * GiB, base + 22 * GiB + 2 * MiB, "r-xp", "/usr/lib/x86_64-linux-gnu/libc.so.6", 1400),
    mapping(base + 23 * GiB, base + 23 * GiB + 1 * MiB, "rw-p", "[stack]", 512)
  ].join("\n")

  it("sorts each mapping's resident pages into its part", () => {
    expect(residentParts(smaps, node)).toEqual({
      "Node's binary": 32,
      malloc: 48,
      "WebAssembly memory": 33,
      "compiled code": 12,
      "V8's heap and the rest": 41.5,
      "other files": 1400 / 1024
    })
  })

  it("prints the parts largest first, leaving out what is not resident", () => {
    expect(residentPartsLine(residentParts(smaps, node))).toBe(
      "malloc 48, V8's heap and the rest 42, WebAssembly memory 33, Node's binary 32, compiled code 12, other files 1"
    )
    expect(residentPartsLine(residentParts(mapping(0x1000, 0x2000, "rw-p", "[heap]", 4), node))).toBe("")
  })

  it.runIf(process.platform === "linux")("reads a live process's parts, which add up to its RSS", () => {
    const parts = residentPartsOf(process.pid)
    expect(parts).toBeDefined()
    const total = Object.values(parts!).reduce((sum, mib) => sum + mib, 0)
    const rssMib = statusKb(process.pid, "VmRSS")! / 1024
    expect(Math.abs(total - rssMib)).toBeLessThan(0.2 * rssMib)
    expect(parts!["Node's binary"]).toBeGreaterThan(1)
    expect(parts!["V8's heap and the rest"]).toBeGreaterThan(1)
    expect(residentPartsOf(-1)).toBeUndefined()
  })
})
