import { defineConfig } from "vitest/config"
import { toolsTests } from "./test/postgresRun.ts"
import { shared } from "./vitest.config.ts"

// `npm run test:tools`: the tests that drive the tools package (tools/, which the script installs first).
export default defineConfig({ test: { ...shared, include: [toolsTests] } })
