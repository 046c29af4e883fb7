import {
  type AuthInfo,
  type CallToolResult,
  type McpRequestContext,
  McpServer
} from "@modelcontextprotocol/server"
import { type Context, Effect } from "effect"
import type { McpMount } from "../../contract/mcpMounts.ts"
import { receiptSignatureMetaKey } from "../../contract/receiptSignature.ts"
import { commonInstructions, envelopeInstructions, idempotencyInstructions } from "./toolSchemas.ts"
import type { McpTool } from "./tools.ts"

/** What authentication hands the per-request MCP server: how to run a tool call as the caller. */
export interface McpSession<R> {
  readonly run: (
    call: Effect.Effect<CallToolResult, never, R>,
    signal: AbortSignal
  ) => Promise<CallToolResult>
}

/** Runs tool calls in a request's context: its services, its span, and the authenticated caller. */
export const makeSession = <R>(context: Context.Context<R>): McpSession<R> => ({
  run: (call, signal) => Effect.runPromiseWith(context)(call, { signal })
})

const sessionKey = "svc/session"

/** The session travels to the factory as the SDK's pass-through `authInfo`. */
export const authInfoOf = <R>(token: string, accountId: string, session: McpSession<R>): AuthInfo => ({
  token,
  clientId: accountId,
  scopes: [],
  extra: { [sessionKey]: session }
})

const sessionOf = <R>(context: McpRequestContext): McpSession<R> => {
  const session = context.authInfo?.extra?.[sessionKey]
  if (session === undefined) throw new Error("MCP request reached the server without authentication")
  return session as McpSession<R>
}

const instructions = `Metered public data from a professional network (profnet), a forum and a microblog. Each tool mirrors one REST operation of the same name and takes its query parameters as arguments. ${commonInstructions} ${idempotencyInstructions} ${envelopeInstructions} Every result carries a receipt (signed when the call's \`_meta\` has \`"svc/receipt-signature": true\`; keys at /.well-known/jwks.json); errors are problem documents with \`code\`, \`message\` and, on INVALID_INPUT, \`param\`. get_usage is free.`

/** The server's identity on a mount. */
export const serverInfoOf = (mount: McpMount) => ({
  name: mount.platform === undefined ? "svc-data" : `svc-data-${mount.platform}`,
  version: "2.2"
})

/**
 * A fresh server per request (stateless Streamable HTTP), serving the mount's tools as the caller;
 * `moreInstructions` tell about tools beyond the data ones.
 */
export const mcpServerFactory =
  <R>(mount: McpMount, tools: ReadonlyArray<McpTool<R>>, moreInstructions = "") =>
  (context: McpRequestContext) => {
    const session = sessionOf<R>(context)
    const server = new McpServer(serverInfoOf(mount), {
      capabilities: { tools: { listChanged: false } },
      // The list changes only with a deployment, but it is the bearer's (spend key or management
      // token): cached by its client for an hour, never by a shared cache.
      cacheHints: { "tools/list": { ttlMs: 3_600_000, cacheScope: "private" } },
      instructions: `${instructions}${moreInstructions}`
    })
    for (const tool of tools) {
      server.registerTool(
        tool.name,
        {
          description: tool.description,
          inputSchema: tool.inputSchema,
          outputSchema: tool.outputSchema,
          annotations: tool.annotations,
          ...(tool.meta === undefined ? {} : { _meta: tool.meta })
        },
        (args, ctx) =>
          session.run(
            tool.call(args, { signReceipt: ctx.mcpReq._meta?.[receiptSignatureMetaKey] === true }),
            ctx.mcpReq.signal
          )
      )
    }
    return server
  }
