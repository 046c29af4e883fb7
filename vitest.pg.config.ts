import { defineConfig } from "vitest/config"
import { postgresFiles } from "./test/postgresRun.ts"
import { shared } from "./vitest.config.ts"

// `npm run test:pg`: the files test/postgresRun.ts puts on PostgreSQL (the store's, the ledger's, the
// money rule's, the instances'), on the server of TEST_DATABASE_URL; `npm test` runs them all on PGlite.
if (process.env.TEST_DATABASE_URL === undefined)
  throw new Error(
    "npm run test:pg needs TEST_DATABASE_URL=postgres://... (each file makes its own database there)"
  )

export default defineConfig({ test: { ...shared, include: [...postgresFiles(import.meta.dirname)] } })
