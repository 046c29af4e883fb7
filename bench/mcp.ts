import { existsSync } from "node:fs"
import { join } from "node:path"
import type { Entry } from "./load.ts"
import { repoRoot } from "./proc.ts"

/** How one MCP revision wants a stateless `tools/call` POST. */
interface Dialect {
  readonly name: string
  readonly headers: (tool: string) => Record<string, string>
  readonly meta: Record<string, unknown> | undefined
}

const dialects: ReadonlyArray<Dialect> = [
  {
    name: "2025-11-25 (stateless, no initialize)",
    headers: () => ({ "MCP-Protocol-Version": "2025-11-25" }),
    meta: undefined
  },
  {
    name: "2026-07-28 (per-request envelope)",
    headers: (tool) => ({
      "MCP-Protocol-Version": "2026-07-28",
      "Mcp-Method": "tools/call",
      "Mcp-Name": tool
    }),
    meta: {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "svc-bench", version: "0.1.0" },
      "io.modelcontextprotocol/clientCapabilities": {}
    }
  }
]

export type McpProbe =
  | { readonly available: true; readonly dialect: string; readonly entry: (key: string) => Entry }
  | { readonly available: false; readonly reason: string }

const entryFor =
  (dialect: Dialect, tool: string, args: Record<string, unknown>) =>
  (key: string, idempotencyKey = "{{IDEM}}"): Entry => ({
    path: "/mcp",
    headers: {
      Authorization: `Bearer ${key}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      ...dialect.headers(tool)
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: tool,
        arguments: { ...args, idempotency_key: idempotencyKey },
        ...(dialect.meta === undefined ? {} : { _meta: dialect.meta })
      }
    })
  })

/** The JSON-RPC message of a reply, JSON or a one-event SSE stream. */
const messageOf = (contentType: string, text: string): any => {
  if (contentType.includes("text/event-stream")) {
    const data = text
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trim())
      .join("")
    return data.length === 0 ? undefined : JSON.parse(data)
  }
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Finds the dialect the running service's `/mcp` answers a `tools/call` in, with a real call
 * (which also fills nothing new: the bench calls it after the REST warm-up). "not available"
 * when nothing is mounted at /mcp or no dialect gets a tool result.
 */
export const probeMcp = async (
  baseUrl: string,
  key: string,
  tool: string,
  args: Record<string, unknown>
): Promise<McpProbe> => {
  const failures: Array<string> = []
  for (const [index, dialect] of dialects.entries()) {
    const entry = entryFor(dialect, tool, args)(key, `bench-mcp-probe-${Date.now()}-${index}`)
    const response = await fetch(`${baseUrl}${entry.path}`, {
      method: "POST",
      headers: { ...entry.headers },
      ...(entry.body === undefined ? {} : { body: entry.body })
    })
    const text = await response.text()
    if (response.status === 404 && index === 0) {
      const source = existsSync(join(repoRoot, "src", "surfaces", "mcp")) ? "present" : "absent"
      return { available: false, reason: `POST /mcp answered 404 (src/surfaces/mcp/ is ${source})` }
    }
    const message = messageOf(response.headers.get("content-type") ?? "", text)
    if (response.status === 200 && message?.result !== undefined && message.result.isError !== true) {
      return { available: true, dialect: dialect.name, entry: (k) => entryFor(dialect, tool, args)(k) }
    }
    failures.push(`${dialect.name}: ${response.status} ${text.slice(0, 200)}`)
  }
  return { available: false, reason: `no dialect got a tool result: ${failures.join(" | ")}` }
}
