import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import { envelopeJson, envelopeOf } from "../../src/metering/receipt.ts"
import { freshDatabase, storeName } from "../support/database.ts"

/**
 * The funding order exists once, as the database's `svc_draw` (migrations/functions.sql); the
 * reservation, the settlement and the cache hit's charge all call it. Its properties are checked
 * here against the function itself, on the store the suite runs on.
 */
interface Sources {
  readonly free: number
  readonly grant: number
  readonly balance: number
}
const credits = fc.integer({ min: 0, max: 100_000 })
const sources = fc.record({ free: credits, grant: credits, balance: credits })
const total = (s: Sources) => s.free + s.grant + s.balance

const draw = (amount: number, from: Sources) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{
      readonly from_free: number | null
      readonly from_grant: number | null
      readonly from_balance: number | null
    }>`SELECT from_free, from_grant, from_balance FROM svc_draw(${amount}, ${from.free}, ${from.grant}, ${from.balance})`
    return row?.from_free === null || row === undefined
      ? undefined
      : { free: Number(row.from_free), grant: Number(row.from_grant), balance: Number(row.from_balance) }
  }).pipe(Effect.orDie)

const samples = <A>(arbitrary: fc.Arbitrary<A>, seed: number) => fc.sample(arbitrary, { seed, numRuns: 300 })

describe(`the funding order, svc_draw (${storeName})`, () => {
  layer(freshDatabase, { timeout: 60_000 })((it) => {
    it.effect(
      "draws exactly the amount, free budget first, then grant, then balance, never more than there is",
      () =>
        Effect.gen(function* () {
          for (const [amount, from] of samples(fc.tuple(credits, sources), 1)) {
            const drawn = yield* draw(amount, from)
            if (drawn === undefined) {
              assert.isBelow(total(from), amount)
              continue
            }
            assert.strictEqual(total(drawn), amount)
            assert.isAtMost(drawn.free, from.free)
            assert.isAtMost(drawn.grant, from.grant)
            assert.isAtMost(drawn.balance, from.balance)
            // A later source is touched only once the earlier ones are used up.
            if (drawn.grant > 0) assert.strictEqual(drawn.free, from.free)
            if (drawn.balance > 0) assert.strictEqual(drawn.grant, from.grant)
          }
        })
    )

    it.effect("covers the amount whenever the sources together can", () =>
      Effect.gen(function* () {
        for (const [from, cut] of samples(fc.tuple(sources, fc.nat()), 2)) {
          const amount = total(from) === 0 ? 0 : cut % (total(from) + 1)
          assert.isDefined(yield* draw(amount, from))
        }
      })
    )

    it.effect(
      "settling takes the charge from what was reserved, in order, and the rest goes back whole",
      () =>
        Effect.gen(function* () {
          for (const [reserved, charged] of samples(
            fc.tuple(sources, fc.integer({ min: 0, max: 400_000 })),
            3
          )) {
            // As svc_settle draws the charge (at most the reservation) from the reservation itself.
            const taken = yield* draw(Math.min(charged, total(reserved)), reserved)
            assert.isDefined(taken)
            if (taken === undefined) continue
            assert.strictEqual(total(taken), Math.min(charged, total(reserved)))
            for (const source of ["free", "grant", "balance"] as const) {
              assert.isAtLeast(taken[source], 0)
              assert.isAtLeast(reserved[source] - taken[source], 0)
            }
            if (taken.grant > 0) assert.strictEqual(taken.free, reserved.free)
            if (taken.balance > 0) assert.strictEqual(taken.grant, reserved.grant)
          }
        })
    )

    it.effect("examples: a split charge, and nothing drawn when the sources fall short", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* draw(4, { free: 3, grant: 2, balance: 5 }), {
          free: 3,
          grant: 1,
          balance: 0
        })
        assert.deepStrictEqual(yield* draw(0, { free: 3, grant: 2, balance: 5 }), {
          free: 0,
          grant: 0,
          balance: 0
        })
        assert.isUndefined(yield* draw(11, { free: 3, grant: 2, balance: 5 }))
      })
    )
  })
})

describe("the envelope's JSON", () => {
  it("made from the stored result's JSON is the envelope serialised, member for member", () => {
    const result = {
      schema_version: 2 as const,
      kind: "person",
      data: { name: 'A "quoted" name', list: [1, 2], nested: { x: null } },
      freshness: {
        requested: "recent" as const,
        served: "recent" as const,
        fetched_at: "2026-11-25T00:00:00.000Z",
        cache_age_seconds: 3
      }
    }
    const receipt = {
      id: "rcpt_x",
      operation: "getProfile",
      quoted: 6,
      charged: 4,
      refunds: [{ reason: "fewer_results" as const, credits: 2 }],
      funding: { free_tier: 0, grant: 1, balance: 3 },
      idempotency_key: "k-00000001",
      replayed: false,
      created_at: "2026-11-25T00:00:01.000Z",
      key_id: "app_y",
      app_id: "app_y"
    }
    assert.strictEqual(
      envelopeJson(JSON.stringify(result), receipt),
      JSON.stringify(envelopeOf(result, receipt))
    )
  })
})
