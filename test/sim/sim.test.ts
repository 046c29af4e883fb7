import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { postgresUrl, storeName } from "../support/database.ts"
import { defaults, type SimArgs, scheduleOf, simulate } from "./main.ts"
import { mutationOps, mutations } from "./mutations.ts"
import { runSchedule } from "./simulation.ts"

const short: SimArgs = { ...defaults, ops: 130, shrink: false, pgUrl: postgresUrl }

describe(`the deterministic simulation (${storeName})`, () => {
  it.effect(
    `a seed passes every invariant, and ${postgresUrl === undefined ? "the same seed gives the same trace twice" : "passes again"}`,
    () =>
      Effect.gen(function* () {
        const first = yield* simulate({ ...short, seed: "101" })
        assert.isTrue(first.ok, first.lines.join("\n"))
        const again = yield* simulate({ ...short, seed: "101" })
        assert.isTrue(again.ok, again.lines.join("\n"))
        // Bit for bit in process; on PostgreSQL the network's timing decides some interleavings.
        if (postgresUrl === undefined) {
          assert.strictEqual(again.result.trace, first.result.trace)
          assert.deepStrictEqual(again.result.log, first.result.log)
        }
        // The run did what the mix promises: data calls answered, replays, and faults that happened.
        assert.isAbove(first.result.counts.charged ?? 0, 20)
        assert.isAbove(first.result.counts.replays ?? 0, 0)
        const other = yield* simulate({ ...short, seed: "102" })
        assert.isTrue(other.ok, other.lines.join("\n"))
        assert.notStrictEqual(other.result.trace, first.result.trace)
      }),
    240_000
  )

  it.effect(
    "a refund cut off by a dropped connection: the model counts what the stranded reservation still holds",
    () =>
      Effect.gen(function* () {
        // Seed 14's first 25 steps: an upstream outage answers 502, the refund's transaction is cut
        // by a dropped connection, so the free credits stay reserved until the lease runs out.
        const run = yield* runSchedule(scheduleOf({ ...short, ops: 400, seed: "14" }).slice(0, 25), {
          seed: "14",
          instances: short.instances,
          clients: short.clients,
          mutation: undefined,
          pgUrl: postgresUrl,
          verbose: false
        })
        assert.isTrue(run.ok, JSON.stringify(run.failure))
      }),
    240_000
  )

  for (const mutation of mutations) {
    it.effect(
      `the planted bug ${mutation.name} is caught`,
      () =>
        Effect.gen(function* () {
          const run = yield* runSchedule(scheduleOf({ ...short, ops: mutationOps(mutation), seed: "1" }), {
            seed: "1",
            instances: short.instances,
            clients: short.clients,
            mutation: mutation.name,
            pgUrl: postgresUrl,
            verbose: false
          })
          assert.isFalse(run.ok, `${mutation.name} went unnoticed`)
        }),
      240_000
    )
  }

  it.effect(
    "a failure shrinks to a short schedule that still fails",
    () =>
      Effect.gen(function* () {
        const outcome = yield* simulate({
          ...short,
          ops: 330,
          seed: "1",
          mutation: "forget-one-in-flight",
          shrink: true
        })
        assert.isFalse(outcome.ok)
        const report = outcome.lines.join("\n")
        assert.include(report, "invariant broken: one call in flight per account")
        const found = /shortest failing schedule found \((\d+) of (\d+) steps/.exec(report)
        assert.isNotNull(found, report)
        assert.isBelow(Number(found![1]), Number(found![2]))
      }),
    600_000
  )
})
