import { request as httpRequest } from "node:http"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Effect } from "effect"
import type { Reply } from "../support/app.ts"

/** The two client generations the service must serve. */
export const modes = [
  { name: "2026-07-28 (auto negotiation)", era: "modern", options: { versionNegotiation: { mode: "auto" } } },
  { name: "2025 handshake", era: "legacy", options: {} }
] as const
export type Mode = (typeof modes)[number]

/** An MCP client over real HTTP, with the key and (through the trusted loopback proxy) a client IP. */
export const connect = (url: string, auth: { readonly key: string; readonly ip: string }, mode: Mode) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "svc-mcp-test", version: "1.0.0" }, mode.options)
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${auth.key}`, "x-forwarded-for": auth.ip } }
      })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

/**
 * One tool call; the result as the client hands it over. An error result's problem travels only as
 * JSON text (its `structuredContent` would have to match the envelope's output schema): `problem`.
 */
export const callTool = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(() => client.callTool({ name, arguments: args })).pipe(
    Effect.map((result) => {
      const isError = result.isError === true
      const text = (result.content as ReadonlyArray<{ type: string; text?: string }>).find(
        (c) => c.type === "text"
      )?.text
      return {
        isError,
        structured: result.structuredContent as any,
        problem: (isError && text !== undefined ? JSON.parse(text) : undefined) as any,
        text
      }
    })
  )

/** A raw HTTP request through `node:http`, which (unlike fetch) lets a test forge the Host header. */
export const rawRequest = (
  url: string,
  options: { readonly method?: string; readonly headers?: Record<string, string>; readonly body?: string }
) =>
  Effect.callback<Reply>((resume) => {
    const req = httpRequest(url, { method: options.method ?? "POST", headers: options.headers }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => {
        text += chunk
      })
      res.on("end", () => {
        let body: unknown = text
        try {
          body = JSON.parse(text)
        } catch {}
        const headers = new Headers()
        for (const [name, value] of Object.entries(res.headers))
          if (typeof value === "string") headers.set(name, value)
        resume(Effect.succeed({ status: res.statusCode ?? 0, headers, body, text }))
      })
    })
    req.on("error", (error) => resume(Effect.die(error)))
    if (options.body !== undefined) req.write(options.body)
    req.end()
  })

export const initializeBody = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
})

export const jsonRpcHeaders = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream"
}
