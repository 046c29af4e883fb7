import { assert, describe, it } from "@effect/vitest"
import { settlement } from "../../src/domain/pricing.ts"

describe("settlement: charged = quote - refunds, in one place", () => {
  it("subtracts the refunds of a credit or more, never below zero", () => {
    assert.deepStrictEqual(settlement(8, []), { charged: 8, refunds: [] })
    assert.deepStrictEqual(
      settlement(8, [
        { reason: "domain_resolved_before", credits: 4 },
        { reason: "fewer_results", credits: 0 }
      ]),
      { charged: 4, refunds: [{ reason: "domain_resolved_before", credits: 4 }] }
    )
    assert.strictEqual(
      settlement(6, [
        { reason: "realtime_fallback", credits: 2 },
        { reason: "domain_resolved_before", credits: 6 }
      ]).charged,
      0
    )
  })
})
