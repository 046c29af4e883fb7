import { execFile } from "node:child_process"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { toolPath } from "../support/tools.ts"
import { freePort } from "./support.ts"

const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const suite = toolPath("@modelcontextprotocol/conformance/dist/index.js")

/** The MCP conformance suite's authorization-server scenario that needs no person at a browser. */
describe(`MCP conformance: authorization server (${storeName})`, () => {
  layer(testApp(testOperations, { port, baseUrl }), { timeout: 60_000 })((it) => {
    it.effect("authorization-server-metadata-endpoint passes, with CIMD advertised", () =>
      Effect.gen(function* () {
        const output = yield* Effect.promise(
          () =>
            new Promise<string>((resolve) =>
              execFile(
                process.execPath,
                [
                  suite,
                  "authorization",
                  "--url",
                  baseUrl,
                  "--scenario",
                  "authorization-server-metadata-endpoint"
                ],
                { timeout: 60_000 },
                (_error, stdout, stderr) => resolve(`${stdout}${stderr}`)
              )
            )
        )
        assert.include(output, "Passed: 2/2, 0 failed", output)
        assert.include(output, "client_id_metadata_document_supported=true")
      })
    )
  })
})
