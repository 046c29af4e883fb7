import { execFile } from "node:child_process"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { toolPath } from "../support/tools.ts"
import { sampleArguments } from "./samples.ts"

const inspector = toolPath("@modelcontextprotocol/inspector/clients/launcher/build/index.js")

/** The official MCP Inspector's CLI against the test server, run as a user would run it. */
const inspect = (url: string, key: string | undefined, args: ReadonlyArray<string>) =>
  Effect.acquireUseRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "mcp-inspector-"))),
    (home) =>
      Effect.callback<{ readonly code: number; readonly stdout: string; readonly stderr: string }>(
        (resume) => {
          execFile(
            process.execPath,
            [
              inspector,
              "--cli",
              url,
              "--transport",
              "http",
              ...(key === undefined ? [] : ["--header", `Authorization: Bearer ${key}`]),
              ...args
            ],
            // It writes a catalog of servers under the home directory: a scratch one.
            {
              env: { ...process.env, HOME: home, MCP_CATALOG_PATH: join(home, "mcp.json") },
              timeout: 60_000
            },
            (error, stdout, stderr) =>
              resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
          )
        }
      ),
    (home) => Effect.promise(() => rm(home, { recursive: true, force: true }))
  )

const callArgs = (tool: string, args: Record<string, string>) => [
  "--method",
  "tools/call",
  "--tool-name",
  tool,
  ...Object.entries(args).flatMap(([name, value]) => ["--tool-arg", `${name}=${value}`])
]

/**
 * The Inspector checks `structuredContent` against the tool's `outputSchema`, error results
 * included: a problem document there was once shown as a schema error instead of the problem.
 */
describe(`MCP Inspector CLI (${storeName})`, () => {
  layer(testApp(operations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("lists the tools, validates results, and shows a failing call's problem", () =>
      Effect.gen(function* () {
        // Its `--header` needs Node 22, which the npm scripts run (the pinned `node` package).
        assert.isAtLeast(Number(process.versions.node.split(".")[0]), 22)
        const app = yield* TestApp
        const { key } = yield* app.mint()
        const url = `${app.url}/mcp`

        // Keyless: without a TTY the CLI refuses to start OAuth; told to use stored auth only, it
        // prints the 401's body, the KEY_REQUIRED problem with the mint recipe.
        const keyless = yield* inspect(url, undefined, ["--stored-auth-only", "--method", "tools/list"])
        assert.notStrictEqual(keyless.code, 0)
        assert.include(keyless.stderr, "KEY_REQUIRED")
        assert.include(keyless.stderr, "/v1/keys/mint")

        const listed = yield* inspect(url, key, ["--method", "tools/list"])
        assert.strictEqual(listed.code, 0, listed.stderr)
        assert.deepStrictEqual(
          JSON.parse(listed.stdout).tools.map((tool: { name: string }) => tool.name),
          [...operations.map((operation) => operation.id), "get_usage"]
        )

        // The CLI reads `--tool-arg k=v` as JSON when it parses: a bare numeric id becomes a number
        // (digits lost past 2^53), which a string parameter refuses. Quoted, it stays text.
        const id = String(sampleArguments.getTweet!.id)
        const found = yield* inspect(url, key, callArgs("getTweet", { id: JSON.stringify(id) }))
        assert.strictEqual(found.code, 0, found.stdout)
        assert.strictEqual(JSON.parse(found.stdout).structuredContent.kind, "tweet")
        const bare = yield* inspect(url, key, callArgs("getTweet", { id }))
        assert.deepInclude(JSON.parse(JSON.parse(bare.stdout).content[0].text), {
          code: "INVALID_INPUT",
          param: "id"
        })

        const failed = yield* inspect(url, key, callArgs("getTweet", { id: "not a tweet id" }))
        assert.notMatch(failed.stderr, /must have required property|schema/i)
        assert.strictEqual(JSON.parse(failed.stderr).error.code, "tool_is_error", failed.stderr)
        const result = JSON.parse(failed.stdout)
        assert.isTrue(result.isError)
        assert.isUndefined(result.structuredContent)
        const problem = JSON.parse(result.content[0].text)
        assert.strictEqual(problem.code, "INVALID_INPUT")
        assert.strictEqual(problem.param, "id")
      })
    )
  })
})
