import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { callTool, connect, jsonRpcHeaders, modes } from "./support.ts"

const freshIp = ipSequence("10.61")

describe(`MCP hostile input (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    for (const mode of modes) {
      it.effect(`${mode.name}: a control character in a tool argument is REST's INVALID_INPUT`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const client = yield* connect(`${app.url}/mcp`, { key, ip }, mode)
          const cases = [
            ["testEcho", { value: "a\u0000b" }, "/v1/profnet/test-echo?value=a%00b", "value"],
            [
              "testEcho",
              { value: "ok", cursor: "\u001b[2J" },
              "/v1/profnet/test-echo?value=ok&cursor=%1B%5B2J",
              "cursor"
            ],
            ["testResolve", { value: "\u007f" }, "/v1/profnet/test-resolve?value=%7F", "value"]
          ] as const
          for (const [tool, args, path, param] of cases) {
            const result = yield* callTool(client, tool, args)
            const rest = yield* app.call(path, { key, ip })
            assert.isTrue(result.isError, tool)
            assert.strictEqual(result.problem.code, "INVALID_INPUT")
            assert.strictEqual(result.problem.param, param)
            assert.deepStrictEqual(result.problem, rest.body)
          }
          const usage = yield* callTool(client, "get_usage", {})
          assert.deepStrictEqual(usage.structured.today, { credits: 0, calls: 0 })
        })
      )
    }

    it.effect("a body that is not JSON is a JSON-RPC parse error (-32700), not a 500 or a problem", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        for (const body of ["{not json", "", "\u0000", '{"jsonrpc":"2.0","id":1,"method":', "[1,"]) {
          const reply = yield* app.call("/mcp", { method: "POST", key, ip, headers: jsonRpcHeaders, body })
          assert.strictEqual(reply.status, 400, JSON.stringify(body))
          assert.match(reply.headers.get("content-type") ?? "", /^application\/json/)
          assert.strictEqual(reply.body.jsonrpc, "2.0")
          assert.isNull(reply.body.id)
          assert.strictEqual(reply.body.error.code, -32700)
          assert.isString(reply.body.error.message)
        }
      })
    )
  })
})
