import { assert, describe, it } from "vitest"
import { type DayUsage, usageChart } from "../../src/surfaces/http/dashboard/chart.ts"

const days = (used: Readonly<Record<number, number>>): ReadonlyArray<DayUsage> =>
  Array.from({ length: 30 }, (_, index) => {
    const total = used[index] ?? 0
    const day = new Date(Date.UTC(2026, 10, 7 + index)).toISOString().slice(0, 10)
    return { day, byPlatform: total === 0 ? {} : { profnet: total }, total, calls: total === 0 ? 0 : 1 }
  })

const xs = (svg: string) =>
  [...svg.matchAll(/<rect x="([\d.]+)"[^>]* width="([\d.]+)"/g)].map((m) => [Number(m[1]), Number(m[2])])

describe("the 30-day usage chart", () => {
  it("with one day of data draws one bar at the left under its date, not a sliver at the far right", () => {
    const svg = usageChart(days({ 29: 7 }), ["profnet"]).value
    const bars = xs(svg)
    assert.lengthOf(bars, 1)
    const [x, width] = bars[0]!
    assert.isBelow(x, 45, "at the plot's left edge")
    assert.isAtMost(width, 352 / 7, "at most a seventh of the plot wide")
    assert.include(svg, ">2026-12-06</text>")
    assert.strictEqual(
      svg.match(/<text [^>]*>\d{4}-\d{2}-\d{2}<\/text>/g)?.length,
      1,
      "one date under one bar"
    )
    assert.include(svg, "from 2026-12-06 to 2026-12-06: 7 in all")
  })

  it("starts at the first day used and spreads the days after it over the plot, dated at both ends", () => {
    const svg = usageChart(days({ 10: 4, 20: 8, 29: 2 }), ["profnet"]).value
    const bars = xs(svg)
    assert.lengthOf(bars, 3)
    assert.isBelow(bars[0]![0], 45)
    assert.isAbove(bars[2]![0], 350, "the last day at the right")
    assert.include(svg, ">2026-11-17</text>")
    assert.include(svg, ">2026-12-06</text>")
  })

  it("with no use, the whole 30 days, empty", () => {
    const svg = usageChart(days({}), ["profnet"]).value
    assert.lengthOf(xs(svg), 0)
    assert.include(svg, "from 2026-11-07 to 2026-12-06: 0 in all")
  })
})
