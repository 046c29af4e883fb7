import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { chargeHolds } from "../../src/metering/invariants.ts"
import type { Receipt } from "../../src/metering/receipt.ts"

const receipt = (quoted: number, charged: number, funding: Receipt["funding"]): Receipt => ({
  id: "rcpt_test",
  operation: "getProfile",
  quoted,
  charged,
  refunds: [],
  funding,
  idempotency_key: null,
  replayed: false,
  created_at: "2026-01-01T00:00:00.000Z",
  key_id: "key_test"
})

const defectOf = (exit: Exit.Exit<void>) => (Exit.isFailure(exit) ? String(Cause.squash(exit.cause)) : "none")

describe("the money path's invariants on a receipt", () => {
  it.effect("a receipt charged within its quote, its funding summing to the charge, holds", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(chargeHolds(receipt(10, 7, { free_tier: 2, grant: 3, balance: 2 })))
      assert.isTrue(Exit.isSuccess(exit))
    })
  )

  it.effect("charged above quoted is a defect naming the receipt", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(chargeHolds(receipt(5, 6, { free_tier: 0, grant: 0, balance: 6 })))
      assert.include(defectOf(exit), "rcpt_test charged 6 > quoted 5")
    })
  )

  it.effect("funding parts that do not sum to the charge are a defect", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(chargeHolds(receipt(10, 7, { free_tier: 2, grant: 3, balance: 1 })))
      assert.include(defectOf(exit), "= 6 != charged 7")
    })
  )
})
