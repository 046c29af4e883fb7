import { describe, expect, it } from "vitest"
import { calibrate, calibrationChecksum, calibrationLine, timeRounds } from "../../bench/calibration.ts"

describe("the bench's JavaScript calibration", () => {
  // The figure compares machines only while the work is the same: a change to the work changes this
  // number, and the figures of runs before the change no longer compare with those after it.
  it("does the same work on every machine", () => {
    expect(calibrationChecksum(2000)).toBe(11979472)
    expect(calibrationChecksum(2000)).toBe(calibrationChecksum(2000))
    expect(calibrationChecksum(2001)).not.toBe(calibrationChecksum(2000))
  })

  it("times batches of the work", () => {
    const { usPerRound, fastest, slowest } = timeRounds(0, 20, 3)
    expect(Number.isFinite(usPerRound)).toBe(true)
    expect(fastest).toBeGreaterThan(0)
    expect(fastest).toBeLessThanOrEqual(usPerRound)
    expect(slowest).toBeGreaterThanOrEqual(usPerRound)
  })

  it("times the work in a process of its own", async () => {
    const { usPerRound } = await calibrate()
    expect(Number.isFinite(usPerRound)).toBe(true)
    expect(usPerRound).toBeGreaterThan(0)
  }, 60_000)

  it("prints the figure before and after the cases", () => {
    expect(
      calibrationLine(
        { usPerRound: 3.214, fastest: 3.1, slowest: 4 },
        { usPerRound: 3.4, fastest: 3.3, slowest: 3.5 }
      )
    ).toMatch(
      /µs a round 3\.21 \(batches 3\.10-4\.00\) at the start, 3\.40 \(batches 3\.30-3\.50\) at the end/
    )
  })
})
