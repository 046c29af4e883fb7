import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { person } from "./samples.ts"
import { jsonRpcHeaders } from "./support.ts"

const freshIp = ipSequence("10.53")

const modernMeta = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "svc-mcp-test", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {}
}

/** One stateless `tools/call` POST of either era, without a handshake; the tool result. */
const toolCall = (key: string, ip: string, era: "legacy" | "modern", n: number) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const args = { identifier: person.public_identifier, idempotency_key: crypto.randomUUID() }
    const reply = yield* app.call("/mcp", {
      method: "POST",
      key,
      ip,
      headers:
        era === "legacy"
          ? { ...jsonRpcHeaders, "mcp-protocol-version": "2025-11-25" }
          : {
              ...jsonRpcHeaders,
              "mcp-protocol-version": "2026-07-28",
              "mcp-method": "tools/call",
              "mcp-name": "getProfile"
            },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: n,
        method: "tools/call",
        params: { name: "getProfile", arguments: args, ...(era === "modern" ? { _meta: modernMeta } : {}) }
      })
    })
    assert.strictEqual(reply.status, 200)
    const message =
      typeof reply.body === "string"
        ? JSON.parse(
            reply.body
              .split("\n")
              .find((line) => line.startsWith("data: "))!
              .slice(6)
          )
        : reply.body
    assert.strictEqual(message.id, n)
    assert.notStrictEqual(message.result.isError, true, JSON.stringify(message.result))
    return message.result.structuredContent.receipt.id as string
  })

describe(`MCP callers under concurrency (${storeName})`, () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "calls of two accounts at once each run as their own caller: every receipt on its own account",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const a = yield* paidKey(freshIp(), 10_000)
          const b = yield* paidKey(freshIp(), 10_000)
          // One call at a time per account (the ledger's rule), the two accounts' calls at once.
          const perKey = 12
          const chain = (holder: typeof a, offset: number) =>
            Effect.forEach(
              Array.from({ length: perKey }, (_, i) => offset + 2 * i),
              (n) =>
                Effect.map(
                  toolCall(holder.key, holder.ip, n % 4 < 2 ? "legacy" : "modern", n),
                  (receipt) => ({
                    holder,
                    receipt
                  })
                )
            )
          const chains = yield* Effect.all([chain(a, 0), chain(b, 1)], { concurrency: "unbounded" })
          const receipts = chains.flat()
          for (const { holder, receipt } of receipts) {
            const other = holder === a ? b : a
            const own = yield* app.call(`/v1/receipts/${receipt}`, { key: holder.key, ip: holder.ip })
            assert.strictEqual(own.status, 200, `${receipt} is not on its caller's account`)
            assert.strictEqual(own.body.id, receipt)
            const foreign = yield* app.call(`/v1/receipts/${receipt}`, { key: other.key, ip: other.ip })
            assert.strictEqual(foreign.status, 404, `${receipt} is visible to the other account`)
          }
          for (const holder of [a, b]) {
            const usage = yield* app.call("/v1/usage", { key: holder.key, ip: holder.ip })
            assert.strictEqual(usage.body.today.calls, perKey)
          }
        })
    )
  })
})
