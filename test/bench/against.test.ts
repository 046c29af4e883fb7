import { describe, expect, it } from "vitest"
import { type CheckoutRound, checkoutReport } from "../../bench/against.ts"

const round = (checkout: "this" | "other", n: number, rps: number, errors: number): CheckoutRound => ({
  store: "postgres",
  checkout,
  round: n,
  result: {
    store: "postgres",
    name: "(a) cache hit, metered",
    expected: 200,
    load: {
      tool: "wrk",
      requests: rps * 5,
      seconds: 5,
      rps,
      p50Ms: 1,
      p99Ms: 2,
      maxMs: 3,
      statuses: errors === 0 ? { 200: rps * 5 } : { 200: rps * 5 - errors, 429: errors },
      socketErrors: 0
    },
    errors,
    cpuUsPerRequest: 1_000_000 / rps,
    databaseCpuUsPerRequest: 2_000_000 / rps
  }
})

describe("bench --against: the side-by-side report", () => {
  it("leaves out a round answered with more than 1% other statuses (a 429 round measures the limiter) and says how many", () => {
    const report = checkoutReport({
      other: "/tmp/other",
      rounds: [
        round("this", 1, 4000, 0),
        round("other", 1, 5000, 0),
        round("other", 2, 12000, 60000),
        round("this", 2, 6000, 0),
        // 3 of 15,000 answered 429 (two calls of one account at once): kept.
        round("this", 3, 3000, 3),
        // 200 of 15,000 (1.3%): left out.
        round("other", 3, 3000, 200)
      ],
      memory: []
    })
    const line = report.split("\n").find((row) => row.startsWith("postgres")) ?? ""
    // this: 4000, 6000 and 3000 (mean 4333); other: 5000 only, its 429 rounds left out.
    expect(line).toMatch(/4333 \(3000-6000\)\s+5000 \(5000-5000\)\s+0\.867/)
    // PostgreSQL's CPU a request over the same rounds: this 500, 333 and 667; other 400.
    expect(line).toMatch(/\b500 \/ 400 = 1\.250\b/)
    expect(line).toMatch(/0\/2$/)
  })
})
