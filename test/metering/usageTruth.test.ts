import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { post, signIn } from "../identity/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { type Reply, TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

/**
 * What usage reports for the next call is what the next call finds: `GET /v1/usage`'s
 * `credits_remaining` and `key_cap_remaining` (and the headers of the call before) say how much a
 * call may cost and still be funded, across random accounts (trial or paid, claimed or not, with
 * a grant and a balance), keys (capped per day, month or in total, or not at all), the operator's
 * free-tier switch and global ceiling, and calls on the full path and from the cache.
 */

const freshIp = ipSequence("10.62")
const freePerIp = 40

type Step =
  | { readonly kind: "call"; readonly cost: number; readonly repeat: boolean }
  | { readonly kind: "tier"; readonly open: boolean; readonly ceiling: number | null }

interface Scenario {
  readonly claimed: boolean
  readonly paid: boolean
  readonly grant: number
  readonly balance: number
  readonly cap: { readonly credits: number; readonly period: "day" | "month" | "total" } | null
  readonly steps: ReadonlyArray<Step>
}

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("call" as const),
      cost: fc.integer({ min: 1, max: 25 }),
      repeat: fc.boolean()
    })
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("tier" as const),
      open: fc.boolean(),
      ceiling: fc.option(fc.integer({ min: 0, max: 400 }), { nil: null })
    })
  }
)

const scenario: fc.Arbitrary<Scenario> = fc.record({
  claimed: fc.boolean(),
  paid: fc.boolean(),
  grant: fc.integer({ min: 0, max: 40 }),
  balance: fc.integer({ min: 0, max: 40 }),
  cap: fc.option(
    fc.record({
      credits: fc.integer({ min: 1, max: 40 }),
      period: fc.constantFrom("day" as const, "month" as const, "total" as const)
    }),
    { nil: null }
  ),
  steps: fc.array(step, { minLength: 3, maxLength: 12 })
})

const refusals = new Set(["INSUFFICIENT_CREDITS", "TRIAL_CAP_EXCEEDED", "BUDGET_EXHAUSTED"])
const stats = { runs: 0, served: 0, refused: 0, capped: 0, closed: 0 }
let runs = 0

const runScenario = (s: Scenario) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const admin = yield* Admin
    const sql = yield* SqlClient.SqlClient
    const ip = freshIp()
    const run = ++runs
    const minted = yield* app.mint(ip)
    let key = minted.key
    if (s.claimed) {
      const owner = yield* signIn(app, `usage-truth-${run}@example.com`, { key: minted.key, ip })
      if (s.paid) yield* Effect.orDie(admin.setPlan(minted.account_id, "flex"))
      yield* Effect.orDie(
        sql`UPDATE accounts SET grant_credits = ${s.grant}, balance_credits = ${s.balance}
          WHERE id = ${minted.account_id}`
      )
      if (s.cap !== null) {
        const created = yield* post(
          app,
          "/v1/keys",
          { label: "budgeted", spend_cap_credits: s.cap.credits, cap_period: s.cap.period },
          { key: owner.management_token, ip }
        )
        assert.strictEqual(created.status, 201, JSON.stringify(created.body))
        key = created.body.key
        stats.capped++
      }
    }
    const capped = s.claimed && s.cap !== null
    let value = `v${run}-0`
    let last: Reply | undefined
    let n = 0
    let open = true
    for (const next of s.steps) {
      if (next.kind === "tier") {
        yield* Effect.orDie(
          admin.settings({ freeTierOpen: next.open, globalDailyFreeCredits: next.ceiling ?? undefined })
        )
        open = next.open
        // The operator's switch changes what is left: the last call's headers no longer hold.
        last = undefined
        if (!next.open) stats.closed++
        continue
      }
      const usage = yield* app.call("/v1/usage", { key, ip })
      assert.strictEqual(usage.status, 200, JSON.stringify(usage.body))
      const report = usage.body
      // The headers of the call before say what usage says now (nothing happened in between).
      if (last !== undefined) {
        assert.strictEqual(last.headers.get("credits-remaining"), String(report.credits_remaining))
        assert.strictEqual(
          last.headers.get("key-cap-remaining"),
          report.key_cap_remaining === undefined ? null : String(report.key_cap_remaining)
        )
      }
      assert.strictEqual("key_cap_remaining" in report, capped, JSON.stringify(report))
      if (report.free_tier !== undefined)
        assert.isAtMost(report.free_tier.remaining_today, report.credits_remaining, JSON.stringify(report))
      if (!open && report.free_tier !== undefined)
        assert.strictEqual(report.free_tier.remaining_today, 0, "a closed free tier has nothing left")
      const reported = Math.min(
        report.credits_remaining,
        report.key_cap_remaining ?? Number.POSITIVE_INFINITY
      )

      if (!next.repeat) value = `v${run}-${++n}`
      const answer = yield* app.call(`/v1/profnet/test-echo?value=${value}&cost=${next.cost}`, {
        key,
        ip,
        idempotencyKey: `truth-${run}-${n}-${Math.random().toString(36).slice(2)}`
      })
      const context = `cost ${next.cost}, reported ${reported}: ${JSON.stringify(report)} -> ${answer.status} ${answer.text}`
      if (next.cost <= reported) {
        assert.strictEqual(answer.status, 200, context)
        assert.strictEqual(answer.headers.get("credits-charged"), String(next.cost), context)
        last = answer
        stats.served++
      } else {
        assert.include([402, 403, 503], answer.status, context)
        assert.isTrue(refusals.has(answer.body.code), context)
        last = undefined
        stats.refused++
      }
    }
    yield* Effect.orDie(admin.settings({ freeTierOpen: true, globalDailyFreeCredits: undefined }))
    stats.runs++
  })

describe(`usage reports what the next call finds (${storeName})`, () => {
  layer(
    testApp(testOperations, {
      policy: {
        ...defaultPolicy,
        freeCreditsPerIpDay: freePerIp,
        ratePerMinute: { trial: 100_000, flex: 100_000, production: 100_000 }
      }
    }),
    { timeout: 60_000, excludeTestServices: true }
  )((it) => {
    it.effect(
      "a call costing at most the reported remainder is funded, one above it is refused",
      () =>
        Effect.gen(function* () {
          const context = yield* Effect.context<TestApp | Admin | SqlClient.SqlClient>()
          yield* Effect.promise(() =>
            fc.assert(
              fc.asyncProperty(scenario, (s) => Effect.runPromiseWith(context)(runScenario(s))),
              { numRuns: 25, endOnFailure: true }
            )
          )
          console.log(`usage truth (${storeName}):`, JSON.stringify(stats))
          assert.isAbove(stats.served, 0)
          assert.isAbove(stats.refused, 0)
          assert.isAbove(stats.capped, 0)
          assert.isAbove(stats.closed, 0)
        }),
      240_000
    )
  })
})
