import { assert, describe, it } from "@effect/vitest"
import { type CallToolResult, createMcpHandler } from "@modelcontextprotocol/server"
import { Effect, Schema } from "effect"
import { mcpMounts } from "../../src/contract/mcpMounts.ts"
import { defaultHosts } from "../../src/domain/identifiers/index.ts"
import { operations } from "../../src/operations/registry.ts"
import {
  answerAgain,
  fastCallOf,
  fastCatalogue,
  fastListingOf,
  listingsFor,
  type RequestHeaders
} from "../../src/surfaces/mcp/fastPath.ts"
import { managementTools } from "../../src/surfaces/mcp/managementTools.ts"
import { authInfoOf, mcpServerFactory, serverInfoOf } from "../../src/surfaces/mcp/server.ts"
import { problemResult, structuredResult } from "../../src/surfaces/mcp/toolResults.ts"
import { inputSchema, jsonSchemaOf, noArguments, outputSchema } from "../../src/surfaces/mcp/toolSchemas.ts"
import { type McpTool, mountTools, registryTools } from "../../src/surfaces/mcp/tools.ts"

/**
 * The hot path answers a plain `tools/call` itself: its answers must be the SDK's, byte for byte,
 * for every result a tool gives, in both eras; and what it does not recognise it leaves alone.
 */

/** What the tool under test answers next, and the arguments it was called with. */
let next: CallToolResult = { content: [] }
const seen: Array<unknown> = []
const canned = (tool: McpTool<any>): McpTool<never> => ({
  ...tool,
  call: (args) =>
    Effect.sync(() => {
      seen.push(args)
      return next
    })
})

const Point = Schema.Struct({
  name: Schema.String,
  at: Schema.Array(Schema.Number),
  note: Schema.optional(Schema.String)
})
const point: McpTool<never> = {
  name: "point",
  platform: undefined,
  description: "A test tool.",
  inputSchema: inputSchema(noArguments),
  outputSchema: outputSchema(jsonSchemaOf(Point)),
  annotations: {},
  call: () => Effect.succeed(next)
}

const mount = mcpMounts[0]!
const tools: ReadonlyArray<McpTool<never>> = [
  ...mountTools(mount, registryTools(operations, defaultHosts)),
  ...managementTools,
  point
].map(canned)
const handler = createMcpHandler(mcpServerFactory(mount, tools), { legacy: "stateless" })
const catalogue = fastCatalogue(tools, serverInfoOf(mount))
// The SDK path runs a call through the session; these need no services.
const authInfo = authInfoOf<never>("k", "acct_1", { run: (call) => Effect.runPromise(call) })

const modernMeta = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "t", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {}
}
const accept = "application/json, text/event-stream"

interface Case {
  readonly name: string
  readonly headers: Record<string, string>
  readonly body: unknown
}

const legacy = (
  name: string,
  tool: string,
  args: unknown,
  extra: Record<string, string> = {},
  id: unknown = 1
) => ({
  name,
  headers: { "content-type": "application/json", accept, ...extra },
  body: {
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: tool, ...(args === undefined ? {} : { arguments: args }) }
  }
})
const modern = (name: string, tool: string, args: unknown, id: unknown = 1) => ({
  name,
  headers: {
    "content-type": "application/json",
    accept,
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": tool
  },
  body: {
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: tool, ...(args === undefined ? {} : { arguments: args }), _meta: modernMeta }
  }
})

const served: ReadonlyArray<Case> = [
  legacy("legacy, no version header", "point", {}),
  legacy("legacy, 2025-11-25", "point", { a: 1 }, { "mcp-protocol-version": "2025-11-25" }),
  legacy(
    "legacy, 2025-06-18, string id",
    "point",
    { a: "x" },
    { "mcp-protocol-version": "2025-06-18" },
    "req-7"
  ),
  legacy("legacy, no arguments", "point", undefined, { "mcp-protocol-version": "2025-03-26" }),
  legacy("legacy, a registry tool", "getProfile", { identifier: "someone" }),
  legacy("legacy, a management tool", "list_keys", {}),
  modern("modern", "point", { a: [1, 2] }),
  modern("modern, string id, no arguments", "point", undefined, "abc"),
  modern("modern, a registry tool", "getProfile", { identifier: "someone", idempotency_key: "k-12345678" })
]

const results: ReadonlyArray<[string, CallToolResult]> = [
  ["structured", structuredResult({ name: 'p \u00e9 \u2028 "q" </script>', at: [1, 2.5, -3e-7] })],
  ["structured, optional field", structuredResult({ name: "", at: [], note: "\n\t" })],
  [
    "structured, with _meta",
    structuredResult(
      { name: "m", at: [1] },
      { "svc/usage": { credits_charged: 4, rate_limit: { remaining: 3 } } }
    )
  ],
  [
    "a problem, with _meta",
    problemResult({ code: "RATE_LIMITED", message: "slow" } as any, {
      "svc/usage": { rate_limit: { remaining: 0 } }
    })
  ],
  ["a problem", problemResult({ code: "INVALID_INPUT", message: "no", param: "x" } as any)],
  ["structured content off its schema", structuredResult({ name: 3 })],
  ["no structured content", { content: [{ type: "text", text: "plain" }] }]
]

const sdkAnswer = async (testCase: Case) => {
  const response = await handler.fetch(
    new Request("http://svc.test/mcp", {
      method: "POST",
      headers: testCase.headers,
      body: JSON.stringify(testCase.body)
    }),
    { authInfo }
  )
  return {
    status: response.status,
    headers: Object.fromEntries(response.headers),
    body: await response.text()
  }
}

describe("MCP hot path", () => {
  for (const testCase of served) {
    for (const [what, result] of results) {
      // A registry tool's envelope schema refuses the point: the SDK's output validation error.
      it.effect(`${testCase.name}, ${what}: the SDK's answer`, () =>
        Effect.gen(function* () {
          next = result
          seen.length = 0
          const expected = yield* Effect.promise(() => sdkAnswer(testCase))
          const call = fastCallOf(catalogue, testCase.headers as RequestHeaders, testCase.body)
          assert.isDefined(call)
          const answer = call!.answer(yield* call!.tool.call(call!.args))
          assert.strictEqual(answer.status, expected.status)
          assert.deepStrictEqual(answer.headers, expected.headers)
          assert.strictEqual(answer.body, expected.body)
          // The tool saw the same arguments on both paths.
          assert.strictEqual(seen.length, 2)
          assert.deepStrictEqual(seen[1], seen[0])
        })
      )
    }
  }

  const listings: ReadonlyArray<Case> = [
    {
      ...legacy("", "", {}),
      name: "legacy, no params",
      body: { jsonrpc: "2.0", id: 1, method: "tools/list" }
    },
    {
      ...legacy("", "", {}),
      name: "legacy, empty params",
      body: { jsonrpc: "2.0", id: "a", method: "tools/list", params: {} }
    },
    {
      ...legacy("", "", {}, { "mcp-protocol-version": "2025-11-25" }),
      name: "legacy, 2025-11-25",
      body: { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }
    },
    {
      ...legacy("", "", {}, { "mcp-protocol-version": "2025-11-25" }),
      name: "legacy, 2025-11-25 again",
      body: { jsonrpc: "2.0", id: 3, method: "tools/list" }
    },
    {
      ...legacy("", "", {}, { "mcp-protocol-version": "2025-06-18" }),
      name: "legacy, 2025-06-18",
      body: { jsonrpc: "2.0", id: 4, method: "tools/list" }
    },
    {
      name: "modern",
      headers: { ...modern("", "x", {}).headers, "mcp-method": "tools/list", "mcp-name": undefined as never },
      body: { jsonrpc: "2.0", id: 5, method: "tools/list", params: { _meta: modernMeta } }
    },
    {
      name: "modern, another client",
      headers: { ...modern("", "x", {}).headers, "mcp-method": "tools/list", "mcp-name": undefined as never },
      body: {
        jsonrpc: "2.0",
        id: "six",
        method: "tools/list",
        params: {
          _meta: {
            ...modernMeta,
            "io.modelcontextprotocol/clientInfo": { name: "other", version: "9" },
            "io.modelcontextprotocol/clientCapabilities": { sampling: {} }
          }
        }
      }
    }
  ]
  const listing = listingsFor(handler)
  for (const testCase of listings) {
    it.effect(`tools/list, ${testCase.name}: the SDK's answer, kept`, () =>
      Effect.gen(function* () {
        const headers = Object.fromEntries(
          Object.entries(testCase.headers).filter(([, value]) => value !== undefined)
        )
        const expected = yield* Effect.promise(() => sdkAnswer({ ...testCase, headers }))
        const plain = fastListingOf(headers, testCase.body)
        assert.isDefined(plain)
        const kept = yield* Effect.promise(() => listing(plain!))
        assert.isDefined(kept)
        const answer = answerAgain(kept!, plain!.id)
        assert.strictEqual(answer.status, expected.status)
        assert.deepStrictEqual(answer.headers, expected.headers)
        assert.strictEqual(answer.body, expected.body)
      })
    )
  }

  it("serves every tool of the catalogue, registry and management alike", () => {
    assert.deepStrictEqual(
      [...catalogue.tools.keys()],
      tools.map((tool) => tool.name)
    )
  })

  const left: ReadonlyArray<Case> = [
    legacy("an unknown tool", "nope", {}),
    legacy("arguments that are not an object", "point", [1]),
    legacy("an unsupported version header", "point", {}, { "mcp-protocol-version": "2023-01-01" }),
    legacy("a session id", "point", {}, { "mcp-session-id": "s" }),
    legacy("a fractional id", "point", {}, {}, 1.5),
    {
      ...legacy("no event-stream in Accept", "point", {}),
      headers: { "content-type": "application/json", accept: "application/json" }
    },
    { ...legacy("text/plain", "point", {}), headers: { "content-type": "text/plain", accept } },
    {
      ...legacy("legacy _meta", "point", {}),
      body: {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "point", _meta: { progressToken: 1 } }
      }
    },
    {
      ...legacy("initialize", "point", {}),
      body: { jsonrpc: "2.0", id: 1, method: "initialize", params: {} }
    },
    {
      ...legacy("tools/list", "point", {}),
      body: { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }
    },
    { ...legacy("a batch", "point", {}), body: [legacy("", "point", {}).body] },
    {
      ...legacy("a listing with a cursor", "point", {}),
      body: { jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: "x" } }
    },
    {
      ...legacy("a notification", "point", {}),
      body: { jsonrpc: "2.0", method: "tools/call", params: { name: "point" } }
    },
    {
      ...modern("a modern call naming another tool in Mcp-Name", "point", {}),
      headers: { ...modern("", "point", {}).headers, "mcp-name": "other" }
    },
    {
      ...modern("a modern call without Mcp-Method", "point", {}),
      headers: { ...modern("", "point", {}).headers, "mcp-method": undefined as never }
    },
    {
      ...modern("a modern envelope with more keys", "point", {}),
      body: {
        ...modern("", "point", {}).body,
        params: { name: "point", _meta: { ...modernMeta, progressToken: 2 } }
      }
    },
    {
      ...modern("a legacy header on a modern body", "point", {}),
      headers: { ...modern("", "point", {}).headers, "mcp-protocol-version": "2025-11-25" }
    },
    {
      ...legacy("a modern header on a legacy body", "point", {}),
      headers: { ...legacy("", "point", {}).headers, "mcp-protocol-version": "2026-07-28" }
    }
  ]
  it("leaves every other request to the SDK", () => {
    for (const testCase of left) {
      const headers = Object.fromEntries(
        Object.entries(testCase.headers).filter(([, value]) => value !== undefined)
      )
      assert.isUndefined(fastCallOf(catalogue, headers, testCase.body), testCase.name)
      // The plain listing among these is the hot path's, as a listing.
      if ((testCase.body as any)?.method !== "tools/list" || testCase.name.includes("cursor"))
        assert.isUndefined(fastListingOf(headers, testCase.body), testCase.name)
    }
  })
})
