/**
 * `npm run lint:openapi`: writes the `/v1` OpenAPI document, as a service started with no
 * configuration serves it, to a temporary directory and lints it with Redocly (`recommended`) and
 * Spectral (`spectral:oas`). Any error or warning of either fails it. Neither linter needs the network.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { openApiDocument } from "../../src/contract/openapi.ts"
import { declarations } from "../../src/contract/operations/index.ts"
import { toolPath } from "../support/tools.ts"

const bin = (name: string) => toolPath(`.bin/${name}`)
const dir = mkdtempSync(join(tmpdir(), "svc-openapi-"))
const file = join(dir, "openapi.json")
const env = {
  ...process.env,
  REDOCLY_TELEMETRY: "off",
  REDOCLY_SUPPRESS_UPDATE_NOTICE: "true",
  NO_COLOR: "1"
}

interface RedoclyReport {
  readonly totals: { readonly errors: number; readonly warnings: number }
  readonly problems: ReadonlyArray<{
    readonly ruleId: string
    readonly severity: string
    readonly message: string
    readonly location: ReadonlyArray<{ readonly pointer?: string }>
  }>
}

/** Redocly fails only on errors, so its JSON report is read and warnings count too. */
const redocly = (): boolean => {
  writeFileSync(join(dir, "redocly.yaml"), "extends:\n  - recommended\n")
  const run = spawnSync(
    bin("redocly"),
    ["lint", file, "--config", join(dir, "redocly.yaml"), "--format", "json", "--max-problems", "1000"],
    { env, encoding: "utf8" }
  )
  const start = run.stdout.indexOf("{")
  if (start < 0) {
    process.stderr.write(`redocly: no report\n${run.stdout}${run.stderr}`)
    return false
  }
  const report = JSON.parse(run.stdout.slice(start)) as RedoclyReport
  for (const problem of report.problems)
    console.log(
      `  ${problem.severity} ${problem.ruleId} ${problem.location[0]?.pointer ?? ""}: ${problem.message}`
    )
  console.log(`redocly (recommended): ${report.totals.errors} errors, ${report.totals.warnings} warnings`)
  return report.totals.errors === 0 && report.totals.warnings === 0
}

/** Spectral fails at the severity asked for: warnings and errors. */
const spectral = (): boolean => {
  writeFileSync(join(dir, ".spectral.yaml"), 'extends: ["spectral:oas"]\n')
  const run = spawnSync(
    bin("spectral"),
    [
      "lint",
      file,
      "--ruleset",
      join(dir, ".spectral.yaml"),
      "--fail-severity",
      "warn",
      "--format",
      "stylish"
    ],
    { env, encoding: "utf8" }
  )
  process.stdout.write(run.stdout)
  process.stderr.write(run.stderr)
  console.log(`spectral (spectral:oas): ${run.status === 0 ? "passed" : "failed"}`)
  return run.status === 0
}

try {
  writeFileSync(file, JSON.stringify(openApiDocument(declarations), null, 2))
  const results = [redocly(), spectral()]
  process.exitCode = results.every(Boolean) ? 0 : 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
