import { describe, expect, it } from "vitest"
import { isLocalServer, parseStat, postgresCpuUsBetween } from "../../bench/proc.ts"

describe("bench: PostgreSQL's CPU beside the service's", () => {
  it("reads a process's name and CPU time from its stat line, whatever its name holds", () => {
    // pid (comm) state ppid ... utime (14th) stime (15th) ...
    const line = "4242 (postgres: a) b) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 1 0 7 1 1"
    expect(parseStat(line)).toEqual({ name: "postgres: a) b", cpuUs: 2_800_000 })
  })

  it("counts each process's time between two readings, one that started in between whole", () => {
    const before = new Map([
      [10, 1_000_000],
      [11, 500_000],
      [12, 90_000]
    ])
    const after = new Map([
      [10, 1_300_000], // +300,000
      [11, 500_000], // idle
      [13, 200_000] // a backend that started in between: all of it (12 ended: missed)
    ])
    expect(postgresCpuUsBetween(before, after, 1000)).toBe(500)
    // A reading smaller than before is another process under a reused pid.
    expect(postgresCpuUsBetween(new Map([[10, 900_000]]), new Map([[10, 40_000]]), 10)).toBe(4000)
  })

  it("says nothing when no PostgreSQL process was seen or no request answered", () => {
    expect(postgresCpuUsBetween(new Map(), new Map([[1, 5]]), 10)).toBeUndefined()
    expect(postgresCpuUsBetween(new Map([[1, 5]]), new Map([[1, 9]]), 0)).toBeUndefined()
  })

  it("reads the processes only of a server on this machine", () => {
    expect(isLocalServer("postgres://postgres@127.0.0.1:5432/test")).toBe(true)
    expect(isLocalServer("postgres://u@localhost/db")).toBe(true)
    expect(isLocalServer("postgres://u@[::1]:5432/db")).toBe(true)
    expect(isLocalServer("postgres://u@db.example.com/db")).toBe(false)
    expect(isLocalServer(undefined)).toBe(false)
  })
})
