import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { operations } from "../../src/operations/registry.ts"
import { chargingApplicationName, pipelinedApplicationName } from "../../src/store/PgClient.ts"
import { ipSequence } from "../support/accounts.ts"
import { testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { paidCaller, profilePath, profileSlugs, slugCycle, warmedProfile } from "../support/profiles.ts"

const nextSlug = slugCycle(profileSlugs("engineer"))
const paidAccount = paidCaller(ipSequence("10.79"))

/** How many sessions of this database, by pool (application name), last ran a statement containing `text`. */
const lastRanBy = (text: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* Effect.orDie(sql<{ readonly pool: string; readonly n: number }>`
      SELECT CASE application_name WHEN ${pipelinedApplicationName} THEN 'pipelined'
          WHEN ${chargingApplicationName} THEN 'charging' ELSE 'other' END AS pool, COUNT(*)::int AS n
      FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND position(${text} IN query) > 0
      GROUP BY 1`)
    const count = (pool: string) => rows.find((row) => row.pool === pool)?.n ?? 0
    return { pipelined: count("pipelined"), charging: count("charging"), other: count("other") }
  })

// PGlite has one session; on PostgreSQL the hot paths' statements run on a pool of their own.
describe.runIf(storeName === "postgres")("the hot paths' pools (postgres)", () => {
  layer(testApp(operations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect(
      "a cache hit's charge runs on the charging pool and GET /v1/usage's read on the pipelined pool, and nothing else does",
      () =>
        Effect.gen(function* () {
          const slug = yield* warmedProfile(nextSlug, paidAccount)
          const account = yield* paidAccount(1000)
          assert.strictEqual((yield* account.call(profilePath(slug))).status, 200)
          const charged = yield* lastRanBy("svc_charge_hits(")
          assert.strictEqual(charged.other, 0, "no session of the main pool charged the hit")
          assert.strictEqual(charged.pipelined, 0, "no pipelined session charged the hit")
          assert.isAtLeast(charged.charging, 1)
          assert.isBelow(yield* account.purchased, 1000)
          const usage = yield* lastRanBy("SELECT a.grant_credits, a.balance_credits")
          assert.strictEqual(usage.other, 0, "no session of the main pool read the usage")
          assert.strictEqual(usage.charging, 0, "no charging session read the usage")
          assert.isAtLeast(usage.pipelined, 1)
        })
    )
  })
})
