import { existsSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import {
  isToolsTest,
  onPostgres,
  placeOf,
  postgresFiles,
  storeIndependent,
  testFiles
} from "../postgresRun.ts"

const root = join(import.meta.dirname, "../..")

/** What marks a test harness file as one that reaches a store. */
const storeMark =
  /TEST_DATABASE_URL|support\/database\.ts|SqlClient|PgliteClient|PgClient|store\/Database\.ts/

const relativeImports = /(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g

/**
 * The chain of test harness files (under test/ and bench/, followed through relative imports) by
 * which a file reaches a store, or undefined. The code under test (src/) is not followed: every
 * operation reaches the store there, and what matters is whether the test picks one.
 */
const storeChain = (file: string, seen = new Set<string>()): ReadonlyArray<string> | undefined => {
  if (seen.has(file)) return undefined
  seen.add(file)
  const text = readFileSync(join(root, file), "utf8")
  if (storeMark.test(text)) return [file]
  for (const match of text.matchAll(relativeImports)) {
    const target = relative(root, resolve(dirname(join(root, file)), match[1] as string))
    if (!/^(test|bench)\//.test(target) || !target.endsWith(".ts") || !existsSync(join(root, target)))
      continue
    const chain = storeChain(target, seen)
    if (chain !== undefined) return [file, ...chain]
  }
  return undefined
}

describe("the PostgreSQL run (test/postgresRun.ts)", () => {
  const files = testFiles(root)

  it("names every test file that uses a store: on PostgreSQL, or store-independent with a reason", () => {
    const unnamed = files.flatMap((file) => {
      const chain = storeChain(file)
      return chain !== undefined && placeOf(file) === undefined ? [`${file} (via ${chain.join(" > ")})`] : []
    })
    assert.deepStrictEqual(
      unnamed,
      [],
      "add each to onPostgres in test/postgresRun.ts, or to storeIndependent with why the store cannot change its outcome"
    )
  })

  it("finds the store where it is: the helpers that pick it, and a file of each kind", () => {
    assert.isDefined(storeChain("test/support/database.ts"))
    assert.isDefined(storeChain("test/billing/topup.test.ts"))
    assert.isDefined(storeChain("test/ops/shutdown.test.ts"))
    assert.isUndefined(storeChain("test/domain/identifiers.test.ts"))
  })

  it("has no stale entry, and a reason of some words for each store-independent one", () => {
    for (const entry of [...onPostgres, ...Object.keys(storeIndependent)])
      assert.isTrue(
        files.some((file) => (entry.endsWith("/") ? file.startsWith(entry) : file === entry)),
        `${entry} names no test file`
      )
    for (const [entry, reason] of Object.entries(storeIndependent))
      assert.isAtLeast(reason.split(" ").length, 8, `${entry}: say why the store cannot change its outcome`)
  })

  it("runs the store's, the ledger's, the money rule's and the instances' tests on PostgreSQL", () => {
    const pg = postgresFiles(root)
    for (const file of [
      "test/store/rows.test.ts",
      "test/metering/moneyRule.test.ts",
      "test/metering/fencing.test.ts",
      "test/billing/concurrency.test.ts",
      "test/billing/lockOrder.test.ts",
      "test/identity/instances.test.ts",
      "test/identity/races.test.ts",
      "test/keys/capInstances.test.ts",
      "test/keys/childRace.test.ts",
      "test/metering/usageTruth.test.ts",
      "test/http/receiptAttribution.test.ts",
      "test/http/controlBodies.test.ts",
      "test/http/receiptSignatures.test.ts",
      "test/sim/sim.test.ts"
    ])
      assert.include(pg, file)
    // The PostgreSQL run leaves out the tools tests (they need tools/): one placed there would drop out.
    assert.deepStrictEqual(
      files.filter((file) => isToolsTest(file) && placeOf(file) === "postgres"),
      [],
      "a tools test runs in the tools stage, on PGlite: name it store-independent"
    )
  })
})
