import {
  type AuthInfo,
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  type InputRequiredResult,
  inputRequired,
  type McpRequestContext,
  McpServer,
  type ServerContext
} from "@modelcontextprotocol/server"
import { type Context, Effect } from "effect"
import type { McpMount } from "../../contract/mcpMounts.ts"
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

/** The key of the URL-mode input request a tool result that needs a person is offered as. */
export const personRequestKey = "svc/person"

/** The page a person must open to get past a failed call: the claim page, the offer's checkout, or the upgrade page. */
const personUrlOf = (
  result: CallToolResult
): { readonly url: string; readonly message: string } | undefined => {
  if (result.isError !== true) return undefined
  const text = result.content.find((content) => content.type === "text")
  if (text?.type !== "text") return undefined
  const problem = JSON.parse(text.text) as {
    upgrade_url?: string
    claim_url?: string
    offer?: { checkout_url?: string }
    message?: string
  }
  const url = problem.claim_url ?? problem.offer?.checkout_url ?? problem.upgrade_url
  return url === undefined ? undefined : { url, message: problem.message ?? "Open this page to continue." }
}

/** Whether the client said it takes URL-mode input requests (in the request's envelope, or at its handshake). */
const takesUrlRequests = (server: McpServer, context: ServerContext) => {
  const envelope = context.mcpReq.envelope as Record<string, unknown> | undefined
  const capabilities = (envelope?.[CLIENT_CAPABILITIES_META_KEY] ?? server.server.getClientCapabilities()) as
    | ClientCapabilities
    | undefined
  return capabilities?.elicitation?.url !== undefined
}

/**
 * A failed call a person can fix (pay, or claim the trial account) offered the 2026-07-28 way: an
 * input request in URL mode for its page, when the client takes them; the retry after it runs the
 * call again and answers as it answers (the problem again when nothing was fixed).
 */
const offeringThePage = (
  server: McpServer,
  context: ServerContext,
  result: CallToolResult
): CallToolResult | InputRequiredResult => {
  const page = personUrlOf(result)
  if (page === undefined || context.mcpReq.inputResponses?.[personRequestKey] !== undefined) return result
  if (!takesUrlRequests(server, context)) return result
  return inputRequired({
    inputRequests: { [personRequestKey]: inputRequired.elicitUrl({ message: page.message, url: page.url }) }
  })
}

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
          session
            .run(tool.call(args, ctx.mcpReq._meta), ctx.mcpReq.signal)
            .then((result) => offeringThePage(server, ctx, result))
      )
    }
    return server
  }
