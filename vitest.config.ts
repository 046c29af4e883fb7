import { defineConfig } from "vitest/config"

// The PostgreSQL-only tests (row locks, the PgClient layer, the start line on PostgreSQL) are the
// skipped ones on PGlite; say so once instead of leaving a bare "skipped" count.
if (process.env.TEST_DATABASE_URL === undefined) {
  console.log(
    "TEST_DATABASE_URL is unset: the tests that need PostgreSQL are skipped (set TEST_DATABASE_URL=postgres://... to run them).\n"
  )
}

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30000,
    hookTimeout: 30000,
    // The test servers' logs (refused tokens, simulated defects) are printed only for a failing
    // test, where they help; TEST_LOGS=1 prints them all.
    silent: process.env.TEST_LOGS === undefined ? "passed-only" : false
  }
})
