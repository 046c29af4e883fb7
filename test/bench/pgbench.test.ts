import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createBenchDatabase } from "../../bench/pg.ts"
import { latenciesOfLog, runPgbench } from "../../bench/pgbench.ts"
import { postgresUrl } from "../support/database.ts"

/**
 * The bench sets the cache hit's half-rate latency beside PostgreSQL's own at that rate (`pgbench
 * -N -R`): each timed from when it was due, as the fixed-rate runner times a request.
 */
describe("pgbench at a fixed rate", () => {
  it("counts a transaction's lag behind its schedule in its latency", () => {
    // client_id transaction_no time script_no time_epoch time_us schedule_lag (µs)
    const log = [
      "0 1 1000 0 1795882623 888931 9000",
      "1 1 2000 0 1795882623 916974 0",
      "",
      "0 2 500 0 1795882623 924993 250"
    ].join("\n")
    assert.deepStrictEqual(Array.from(latenciesOfLog(log)), [0.75, 2, 10])
  })

  it("reads a log without the schedule lag column (no -R) as the transactions' own times", () => {
    const log = ["0 1 1500 0 1795882623 888931", "1 1 250 0 1795882623 916974"].join("\n")
    assert.deepStrictEqual(Array.from(latenciesOfLog(log)), [0.25, 1.5])
  })

  it.effect.skipIf(postgresUrl === undefined)(
    "runs pgbench -N -R on PostgreSQL and reads its per-transaction log",
    () =>
      Effect.promise(async () => {
        const database = await createBenchDatabase(postgresUrl!, `${Date.now()}`, "svc_test_pgbench")
        try {
          const result = await runPgbench(database, 2, 2, () => {}, {
            rate: 100,
            loadConnections: 3,
            rounds: 1
          })
          const atRate = result.rounds[0]!.atRate!
          assert.isAbove(result.tps, 0)
          assert.strictEqual(atRate.rate, 100)
          // 2 s at 100 a second: pgbench draws its schedule at random (Poisson), so about 200.
          assert.isAbove(atRate.transactions, 120)
          assert.isBelow(atRate.transactions, 300)
          assert.isAbove(atRate.p50Ms, 0)
          assert.isAtLeast(atRate.p99Ms, atRate.p50Ms)
          assert.isAtLeast(atRate.maxMs, atRate.p99Ms)
          const atConnections = result.rounds[0]!.atConnections!
          assert.strictEqual(atConnections.clients, 3)
          assert.isAbove(atConnections.transactions, 0)
          assert.isAtLeast(atConnections.p99Ms, atConnections.p50Ms)
        } finally {
          await database.drop()
        }
      }),
    60_000
  )
})
