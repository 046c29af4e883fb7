/**
 * Which test files run a second time on PostgreSQL. `npm test` runs every file on PGlite; CI then
 * runs `npm run test:pg` (vitest.pg.config.ts) with `TEST_DATABASE_URL` set, which runs the files
 * this list puts on PostgreSQL: the store's, the ledger's, the money rule's, the accounts', and
 * every test of several instances or of concurrency. A file is on PostgreSQL or store-independent
 * by the longest entry naming it (a directory ending in "/", or a file); a store-independent entry
 * says why the store cannot change its outcome. test/contract/postgresRun.test.ts fails when a test
 * file that uses the store (through test/support/database.ts or the app, `TEST_DATABASE_URL`, or a
 * SqlClient of its own) is named by neither list, so none can silently drop out of the PostgreSQL run.
 */
import { readdirSync } from "node:fs"
import { join } from "node:path"

/** Run on PGlite by `npm test`, then on PostgreSQL by `npm run test:pg`. */
export const onPostgres: ReadonlyArray<string> = [
  "test/audit/",
  "test/billing/",
  "test/bench/pgbench.test.ts",
  "test/http/clock.test.ts",
  "test/http/controlBodies.test.ts",
  "test/http/export.test.ts",
  "test/http/metering.test.ts",
  "test/http/receiptAttribution.test.ts",
  "test/http/receiptSignatures.test.ts",
  "test/http/usageRoute.test.ts",
  "test/identity/",
  "test/keys/",
  "test/mail/",
  "test/mcp/concurrency.test.ts",
  "test/mcp/mcp.test.ts",
  "test/metering/",
  "test/oauth/adapter.test.ts",
  "test/ops/",
  "test/rpc/",
  "test/services/",
  "test/sim/",
  "test/startup/main.test.ts",
  "test/store/",
  "test/webhooks/"
]

/**
 * Files that use the store but whose outcome cannot depend on which one, each with the reason; they
 * run once, on PGlite. What they read from the store is written by code the files above test on both.
 */
export const storeIndependent: Readonly<Record<string, string>> = {
  "test/bench/against.test.ts":
    "the bench's side-by-side report from given numbers; bench/pg.ts is imported through bench/cases.ts but no database is opened",
  "test/bench/rounds.test.ts":
    "the bench's medians, spreads and target ratios from given numbers; bench/pg.ts is imported through bench/cases.ts but no database is opened",
  "test/bench/warmUp.test.ts":
    "the bench's warm-up options and requests against a bare HTTP server; bench/pg.ts is imported through bench/cases.ts but no database is opened",
  "test/bench/x402Check.test.ts":
    "the storm's x402 invariant as a pure function of given rows and transfers; bench/pg.ts is imported for a type, no database is opened",
  "test/contract/interfaceSpec.test.ts":
    "the contract's names (endpoints, parameters, error codes, MCP tools) against the served OpenAPI and MCP catalogue; what the operations do with the store is tested on PostgreSQL elsewhere",
  "test/contract/postgresRun.test.ts":
    "reads the test files' text to check these lists; it opens no database",
  "test/contract/responseExamples.test.ts":
    "the OpenAPI response examples, made by bench/responseExamples.ts on an in-memory PGlite of its own whatever TEST_DATABASE_URL says",
  "test/customer-cli/":
    "the customer CLI's parsing, output and terminal handling over HTTP; the calls it makes are the REST operations tested on PostgreSQL under test/http, test/identity and test/billing",
  "test/dashboard/":
    "the dashboard's pages and browser flows; the account, key and webhook rows they show are tested on PostgreSQL under test/identity, test/keys and test/webhooks",
  "test/pages/":
    "page rendering and browser flows (HTML, forms, focus, layout); the sign-in, claim, checkout and recovery behind them are tested on PostgreSQL under test/identity and test/billing",
  "test/http/":
    "the HTTP surface (headers, methods, caching, hosts, problem wording, the upstream providers' shapes); the metering, usage, clock and export files here that read the ledger are on PostgreSQL",
  "test/http/readme.test.ts":
    "the README's commands run as written (curl, the operator CLI, the SDK snippet); the sign-in, claim and key management they drive are tested on PostgreSQL under test/identity and test/keys",
  "test/mcp/":
    "the MCP wire (auth, hostile input, tool schemas, management tools as REST answers); its calls and charges are on PostgreSQL in test/mcp/mcp.test.ts and test/mcp/concurrency.test.ts",
  "test/mcp/inspector.tools.test.ts":
    "the MCP Inspector's validation of tool results (the tools stage, on PGlite): a protocol check, no store rule",
  "test/oauth/":
    "the OAuth protocol (redirect URIs, client metadata, negatives, browser consent); the provider's rows go through the adapter, tested on PostgreSQL in test/oauth/adapter.test.ts",
  "test/oauth/conformance.tools.test.ts":
    "the MCP conformance suite's authorization-server metadata scenario (the tools stage, on PGlite): a protocol check, no store rule",
  "test/sdk/readmeSnippet.test.ts":
    "the README's receipt verification snippet run as written in Node against a test service; the signing, rotation and key set it checks are on PostgreSQL in test/http/receiptSignatures.test.ts",
  "test/sdk/":
    "the TypeScript SDK's client over HTTP (retries, types, usage parsing); the answers it reads are tested on PostgreSQL under test/http and test/billing",
  "test/sim/guide.test.ts":
    "runs the worked example of docs/simulation.md as written, on PGlite (the command has no --pg); the runs it makes are test/sim/sim.test.ts's, which is on PostgreSQL",
  "test/sim/seeds.test.ts":
    "the many-seeds runner's arguments, lines and summary, and two short seeds in child processes on PGlite; each seed's run is test/sim/sim.test.ts's, which is on PostgreSQL",
  "test/store/checkpoints.test.ts":
    "PGlite's own WAL checkpoints, on a PGlite client of its own whatever TEST_DATABASE_URL says (about 17 s)",
  "test/store/tar.test.ts": "the tar archive PGlite's template is kept in; no database at all",
  "test/store/template.test.ts":
    "PGlite's migrated template directory, on PGlite clients of its own whatever TEST_DATABASE_URL says (about 23 s)",
  "test/upstream/":
    "the upstream providers' answers and their decoding; the one through-the-service case (charges nothing on a malformed answer) is the metering rule tested on PostgreSQL under test/metering",
  "test/webhooks/connectTimeout.test.ts":
    "the webhook client's connect timeout against a stopped listener process; no database is opened, no row is read"
}

/** Every test file, as a path from the repository's root ("test/…/x.test.ts"), sorted. */
export const testFiles = (root: string): ReadonlyArray<string> =>
  readdirSync(join(root, "test"), { recursive: true, encoding: "utf8" })
    .filter((path) => path.endsWith(".test.ts"))
    .map((path) => `test/${path.split("\\").join("/")}`)
    .sort()

const names = (entry: string, file: string) => (entry.endsWith("/") ? file.startsWith(entry) : file === entry)

/** The list that names a file by its longest entry, if any. */
export const placeOf = (file: string): "postgres" | "independent" | undefined => {
  let best: { readonly length: number; readonly place: "postgres" | "independent" } | undefined
  const consider = (entry: string, place: "postgres" | "independent") => {
    if (names(entry, file) && (best === undefined || entry.length > best.length))
      best = { length: entry.length, place }
  }
  for (const entry of onPostgres) consider(entry, "postgres")
  for (const entry of Object.keys(storeIndependent)) consider(entry, "independent")
  return best?.place
}

/** The tests that need the tools package (tools/), run by `npm run test:tools`, not `npm test`. */
export const toolsTests = "test/**/*.tools.test.ts"
export const isToolsTest = (file: string): boolean => file.endsWith(".tools.test.ts")

/** The files `npm run test:pg` runs. */
export const postgresFiles = (root: string): ReadonlyArray<string> =>
  testFiles(root).filter((file) => placeOf(file) === "postgres" && !isToolsTest(file))
