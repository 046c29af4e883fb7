import { assert, describe, it } from "@effect/vitest"
import type { CaseResult } from "../../bench/cases.ts"
import { type MeasuredTarget, targetsOf } from "../../bench/report.ts"
import { median, met, ratio, summarise, withSpread } from "../../bench/rounds.ts"

/** The arithmetic behind the bench's figures: medians of rounds, their spread, and the targets' ratios. */
describe("the bench's rounds", () => {
  it("takes the middle value, or the mean of the two middle ones", () => {
    assert.strictEqual(median([3, 1, 2]), 2)
    assert.strictEqual(median([4, 1, 3, 2]), 2.5)
    assert.strictEqual(median([7]), 7)
    assert.isNaN(median([]))
  })

  it("gives the median with the rounds' spread, leaving out rounds that measured nothing", () => {
    const summary = summarise([900, undefined, 1200, 1000])
    assert.deepStrictEqual(summary, { median: 1000, min: 900, max: 1200, rounds: 3 })
    assert.strictEqual(withSpread(summary, 0), "1000 (900-1200)")
    assert.strictEqual(withSpread({ median: 5, min: 5, max: 5, rounds: 1 }, 1), "5.0")
    assert.strictEqual(summarise([undefined, Number.NaN]), undefined)
    assert.strictEqual(withSpread(undefined, 0), "-")
  })

  it("divides only by a figure above 0", () => {
    assert.strictEqual(ratio(3, 2), 1.5)
    assert.strictEqual(ratio(3, 0), undefined)
    assert.strictEqual(ratio(undefined, 2), undefined)
  })

  it("meets a bound from below or from above, and says when nothing was measured", () => {
    assert.strictEqual(met({ name: "a", ratio: 0.4, bound: { atLeast: 0.4 } }), true)
    assert.strictEqual(met({ name: "a", ratio: 0.39, bound: { atLeast: 0.4 } }), false)
    assert.strictEqual(met({ name: "a", ratio: 1.6, bound: { atMost: 1.5 } }), false)
    assert.strictEqual(met({ name: "a", ratio: undefined, bound: { atMost: 1.5 } }), undefined)
  })

  it("judges each target as the ratio of this run's medians, the measured case's rounds as its spread", () => {
    const row = (
      name: string,
      rps: number,
      p99Ms: number,
      round: number,
      fixedRate?: number
    ): CaseResult => ({
      store: "postgres",
      name,
      round,
      expected: 200,
      ...(fixedRate === undefined ? {} : { fixedRate }),
      load: {
        tool: "wrk",
        requests: rps,
        seconds: 1,
        rps,
        p50Ms: 1,
        p99Ms,
        maxMs: p99Ms,
        statuses: {},
        socketErrors: 0
      }
    })
    const hit = "(a) cache hit, metered"
    const rows = [
      row(hit, 1000, 40, 1),
      row(hit, 1400, 60, 2),
      row(hit, 1200, 50, 3),
      row(`${hit}, at half its rate`, 600, 90, 1, 600),
      row(`${hit}, at half its rate`, 600, 30, 2, 600),
      row(`${hit}, at half its rate`, 600, 80, 3, 600),
      row("(d) rejected, INVALID_INPUT", 4000, 5, 1)
    ]
    const tps = (n: number, rateP99: number, connectionsP99: number) => ({
      tps: n,
      atRate: { clients: 10, rate: 600, tps: 600, transactions: 3000, p50Ms: 5, p99Ms: rateP99, maxMs: 100 },
      atConnections: { clients: 50, tps: n, transactions: 5000, p50Ms: 5, p99Ms: connectionsP99, maxMs: 100 }
    })
    const targets = targetsOf({
      rows,
      baselineRps: 10_000,
      pgbench: {
        tps: 1000,
        clients: 10,
        seconds: 5,
        database: "x",
        output: "",
        rounds: [tps(900, 40, 20), tps(1000, 50, 25), tps(1100, 70, 30)]
      },
      peakRssMb: { postgres: 180 },
      ledger: []
    })
    const named = (start: string): MeasuredTarget => targets.find((target) => target.name.startsWith(start))!
    const hitVsBare = named("postgres: cache hit vs the bare server")
    assert.strictEqual(hitVsBare.ratio, 0.12)
    assert.deepStrictEqual(hitVsBare.spread, { min: 0.1, max: 0.14 })
    assert.strictEqual(met(hitVsBare), true)
    assert.strictEqual(named("postgres: rejected").ratio, 0.4)
    // Usage was not measured: no ratio, and no verdict.
    assert.strictEqual(named("postgres: usage").ratio, undefined)
    assert.strictEqual(named("postgres: cache hit vs pgbench").ratio, 1.2)
    // Half rate: the hit's median p99 (80) over the commit's median p99 (50).
    const halfRate = named("postgres: hit p99 at half rate")
    assert.strictEqual(halfRate.ratio, 1.6)
    assert.strictEqual(met(halfRate), false)
    // 50 connections: the hit's median p99 (50) over the commit's (25).
    const connections = named("postgres: hit p99 at 50 connections")
    assert.strictEqual(connections.ratio, 2)
    assert.strictEqual(met(connections), true)
    assert.strictEqual(met(named("postgres: peak RSS")), true)
  })
})
