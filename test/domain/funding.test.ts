import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { draw, type Funding, split, total } from "../../src/domain/funding.ts"

const credits = fc.integer({ min: 0, max: 100_000 })
const funding: fc.Arbitrary<Funding> = fc.record({ free_tier: credits, grant: credits, balance: credits })

describe("funding arithmetic", () => {
  it("draws the quote exactly, in order free budget, grant, balance, never more than available", () =>
    fc.assert(
      fc.property(credits, funding, (quoted, available) => {
        const drawn = draw(quoted, available)
        if (drawn === undefined) {
          assert.isBelow(total(available), quoted)
          return
        }
        assert.strictEqual(total(drawn), quoted)
        assert.isAtMost(drawn.free_tier, available.free_tier)
        assert.isAtMost(drawn.grant, available.grant)
        assert.isAtMost(drawn.balance, available.balance)
        // A later source is touched only once the earlier ones are used up.
        if (drawn.grant > 0) assert.strictEqual(drawn.free_tier, available.free_tier)
        if (drawn.balance > 0) assert.strictEqual(drawn.grant, available.grant)
      })
    ))

  it("covers the quote whenever the sources together can", () =>
    fc.assert(
      fc.property(funding, fc.nat(), (available, cut) => {
        const quoted = total(available) === 0 ? 0 : cut % (total(available) + 1)
        assert.isDefined(draw(quoted, available))
      })
    ))

  it("settling charges at most the reservation and returns every other credit where it came from", () =>
    fc.assert(
      fc.property(funding, fc.integer({ min: -10, max: 400_000 }), (reserved, charged) => {
        const settled = split(reserved, charged)
        const expected = Math.min(Math.max(0, charged), total(reserved))
        assert.strictEqual(total(settled.charged), expected)
        for (const source of ["free_tier", "grant", "balance"] as const) {
          assert.isAtLeast(settled.charged[source], 0)
          assert.isAtLeast(settled.returned[source], 0)
          assert.strictEqual(settled.charged[source] + settled.returned[source], reserved[source])
        }
        if (settled.charged.grant > 0) assert.strictEqual(settled.charged.free_tier, reserved.free_tier)
        if (settled.charged.balance > 0) assert.strictEqual(settled.charged.grant, reserved.grant)
      })
    ))

  it("a call refunded in full returns the whole reservation", () => {
    const reserved = { free_tier: 3, grant: 2, balance: 5 }
    assert.deepStrictEqual(split(reserved, 0), {
      charged: { free_tier: 0, grant: 0, balance: 0 },
      returned: reserved
    })
    assert.deepStrictEqual(split(reserved, 4), {
      charged: { free_tier: 3, grant: 1, balance: 0 },
      returned: { free_tier: 0, grant: 1, balance: 5 }
    })
  })
})
