import { defineConfig } from "vitest/config"
import { toolsTests } from "./test/postgresRun.ts"

// The PostgreSQL-only tests (row locks, the PgClient layer, the start line on PostgreSQL) are the
// skipped ones on PGlite; say so once instead of leaving a bare "skipped" count.
if (process.env.TEST_DATABASE_URL === undefined) {
  console.log(
    "TEST_DATABASE_URL is unset: the tests that need PostgreSQL are skipped (set TEST_DATABASE_URL=postgres://... to run them).\n"
  )
}

/** What every run shares (this one, vitest.pg.config.ts and vitest.tools.config.ts). */
export const shared = {
  testTimeout: 30000,
  hookTimeout: 30000,
  // The test servers' logs (refused tokens, simulated defects) are printed only for a failing
  // test, where they help; TEST_LOGS=1 prints them all.
  silent: process.env.TEST_LOGS === undefined ? ("passed-only" as const) : false
}

/**
 * The files that start processes of their own (the customer CLI, the bench's helpers, browsers, the
 * README's walk-throughs and its receipt verification snippet, in bash and Node). CI runs the suite
 * in two parts, TEST_PART=others at two workers, then TEST_PART=processes one at a time (see
 * .ci/run); each part is the other's exclusion, so together they are the whole suite.
 */
const startingProcesses = [
  "test/customer-cli/**/*.test.ts",
  "test/bench/**/*.test.ts",
  "test/**/*.browser.test.ts",
  "test/http/readme.test.ts",
  "test/sdk/readmeSnippet.test.ts",
  "test/sim/guide.test.ts",
  "test/sim/seeds.test.ts"
]
const part = process.env.TEST_PART
if (part !== undefined && part !== "others" && part !== "processes")
  throw new Error(`TEST_PART is "others" or "processes", not ${JSON.stringify(part)}`)

export default defineConfig({
  test: {
    ...shared,
    include: part === "processes" ? startingProcesses : ["test/**/*.test.ts"],
    // The tests that drive the tools package (tools/: the MCP Inspector, the conformance suite) run
    // by `npm run test:tools`, which installs it (vitest.tools.config.ts).
    exclude: ["**/node_modules/**", toolsTests, ...(part === "others" ? startingProcesses : [])]
  }
})
