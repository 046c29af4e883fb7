import {
  type CallToolResult,
  classifyInboundRequest,
  isJsonContentType,
  type McpHttpHandler,
  SERVER_INFO_META_KEY,
  SUPPORTED_PROTOCOL_VERSIONS
} from "@modelcontextprotocol/server"
import { authInfoOf } from "./server.ts"
import { jsonTextOf } from "./toolResults.ts"
import { validatesSynchronously } from "./toolSchemas.ts"
import type { McpTool } from "./tools.ts"

/**
 * The hot path of a stateless MCP endpoint: a plain `tools/call` answered without building a
 * server, a transport and web Request/Response objects per request, and a plain `tools/list`
 * answered from the SDK's own first answer (the catalogue never changes). It recognises only the
 * ordinary shape of these requests, in either era, and answers with the very bytes the SDK's
 * serving would (test/mcp/fastPath.test.ts compares the two); anything else (a handshake, a
 * notification, an unknown tool, an unusual header or field, a malformed message) is left to the
 * SDK, which answers it as before.
 */

/** What a server tells a 2026-07-28 client in every result's `_meta`. */
export interface ServerInfo {
  readonly name: string
  readonly version: string
}

/** One catalogue (a mount's tools for one kind of bearer), indexed for the hot path. */
export interface FastCatalogue<R> {
  readonly tools: ReadonlyMap<string, McpTool<R>>
  readonly era: Era
}

/** The modern revision the SDK serves (its `SUPPORTED_MODERN_PROTOCOL_VERSIONS`). */
const modernRevision = "2026-07-28"
const legacyVersions: ReadonlySet<string> = new Set(SUPPORTED_PROTOCOL_VERSIONS)
const clientInfoKey = "io.modelcontextprotocol/clientInfo"
const clientCapabilitiesKey = "io.modelcontextprotocol/clientCapabilities"
const protocolVersionKey = "io.modelcontextprotocol/protocolVersion"
const envelopeKeys: ReadonlySet<string> = new Set([protocolVersionKey, clientInfoKey, clientCapabilitiesKey])
const messageKeys: ReadonlySet<string> = new Set(["jsonrpc", "id", "method", "params"])
const paramKeys = {
  "tools/call": new Set(["name", "arguments"]),
  "tools/list": new Set<string>()
} as const

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value)

const keysWithin = (value: Record<string, unknown>, allowed: ReadonlySet<string>) => {
  for (const key in value) if (!allowed.has(key)) return false
  return true
}

/**
 * A tool the hot path may answer: an object output schema (the 2025 wire would wrap any other
 * root) checked synchronously, and no `x-mcp-header` argument declarations (the modern ladder
 * checks those headers).
 */
const servable = <R>(tool: McpTool<R>) => {
  const jsonSchema = tool.inputSchema["~standard"].jsonSchema
  const output = tool.outputSchema["~standard"]
  return (
    output.jsonSchema.output({ target: "draft-2020-12" }).type === "object" &&
    // Known without calling it for our output schemas, which compile at their first check.
    (validatesSynchronously(tool.outputSchema) || !(output.validate({}) instanceof Promise)) &&
    !JSON.stringify(jsonSchema.input({ target: "draft-2020-12" })).includes("x-mcp-header")
  )
}

export const fastCatalogue = <R>(
  tools: ReadonlyArray<McpTool<R>>,
  serverInfo: ServerInfo
): FastCatalogue<R> => ({
  tools: new Map(tools.filter(servable).map((tool) => [tool.name, tool])),
  era: modernEra(serverInfo)
})

/** The request headers the hot path reads, lower-case as Node and Effect give them. */
export type RequestHeaders = Readonly<Record<string, string | undefined>>

/** A recognised call: which tool, with which arguments, and how to answer its result. */
export interface FastCall<R> {
  readonly tool: McpTool<R>
  readonly args: Record<string, unknown>
  readonly answer: (result: CallToolResult) => FastAnswer
}

export interface FastAnswer {
  readonly status: 200
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** The legacy stateless transport answers a request over a one-event SSE stream. */
const sseHeaders = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  "x-accel-buffering": "no"
}
const jsonHeaders = { "content-type": "application/json" }

/** The SDK's `createToolError` for a failed output validation (`McpServer.validateToolOutput`). */
const toolError = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true })

type Issue = {
  readonly message: string
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined
}
const formatIssue = (issue: Issue) =>
  issue.path === undefined || issue.path.length === 0
    ? issue.message
    : `${issue.path.map((p) => String(typeof p === "object" ? p.key : p)).join(".")}: ${issue.message}`

/** `McpServer.validateToolOutput`, synchronous (the JSON Schema validators are). */
const checkedOutput = <R>(tool: McpTool<R>, result: CallToolResult): CallToolResult => {
  if (result.isError) return result
  if (result.structuredContent === undefined)
    return toolError(
      `Output validation error: Tool ${tool.name} has an output schema but no structured content was provided`
    )
  const checked = tool.outputSchema["~standard"].validate(result.structuredContent)
  // `servable` admits only synchronous validators.
  if (checked instanceof Promise) throw new Error("an asynchronous output schema cannot be served fast")
  if (checked.issues === undefined || checked.issues.length === 0) return result
  return toolError(
    `Output validation error: Invalid structured content for tool ${tool.name}: ${checked.issues.map(formatIssue).join(", ")}`
  )
}

/** The 2026-07-28 wire's additions to a result: its type and the server's identity. */
interface Era {
  readonly extra: Record<string, unknown>
  /** `extra` as JSON members, after a comma. */
  readonly tail: string
  readonly serverInfo: ServerInfo
}

const modernEra = (serverInfo: ServerInfo): Era => {
  const extra = { resultType: "complete", _meta: { [SERVER_INFO_META_KEY]: serverInfo } }
  return { extra, tail: `,${JSON.stringify(extra).slice(1, -1)}`, serverInfo }
}

/**
 * The result as JSON. A result built by `structuredResult` already holds its structured content's
 * JSON as its text: that text is reused rather than the envelope serialised a second time. A
 * result with its own `_meta` leaves the SDK with `_meta` first (and the server's identity added
 * to it, in 2026-07-28).
 */
const resultJson = (result: CallToolResult, era: Era | undefined) => {
  const text = jsonTextOf(result)
  const { _meta: meta, ...rest } = result
  if (meta !== undefined) {
    const stamped = era === undefined ? meta : { ...meta, [SERVER_INFO_META_KEY]: era.serverInfo }
    const members =
      text === undefined
        ? JSON.stringify(rest).slice(1, -1)
        : `"content":${JSON.stringify(rest.content)},"structuredContent":${text}`
    return `{"_meta":${JSON.stringify(stamped)},${members}${era === undefined ? "" : ',"resultType":"complete"'}}`
  }
  if (text === undefined) return JSON.stringify(era === undefined ? result : { ...result, ...era.extra })
  return `{"content":${JSON.stringify(result.content)},"structuredContent":${text}${era?.tail ?? ""}}`
}

type Method = keyof typeof paramKeys

/** A plain request of `method`: its era, id and parameters. */
interface Plain {
  readonly era: "legacy" | "modern"
  readonly id: string | number
  readonly params: Record<string, unknown>
  /** The MCP-Protocol-Version header. */
  readonly version: string | undefined
}

/**
 * A request of `method` in the ordinary shape of either era (parameters among `paramKeys`, plus
 * the envelope in 2026-07-28), or `undefined` for anything else. `name` is what a 2026-07-28
 * request's Mcp-Name header must say (a listing has none).
 */
const plainRequest = (
  method: Method,
  headers: RequestHeaders,
  body: unknown,
  name: (params: Record<string, unknown>) => string | undefined
): Plain | undefined => {
  if (!isJsonContentType(headers["content-type"] ?? null)) return undefined
  const accept = headers.accept
  if (accept === undefined || !accept.includes("application/json") || !accept.includes("text/event-stream"))
    return undefined
  if (headers["mcp-session-id"] !== undefined) return undefined
  if (!isPlainObject(body) || !keysWithin(body, messageKeys)) return undefined
  const { id } = body
  const params = body.params ?? (method === "tools/list" ? {} : undefined)
  if (body.jsonrpc !== "2.0" || body.method !== method || !isPlainObject(params)) return undefined
  if (!(typeof id === "string" || Number.isSafeInteger(id))) return undefined
  const version = headers["mcp-protocol-version"]
  const methodHeader = headers["mcp-method"]
  const nameHeader = headers["mcp-name"]
  const allowed = paramKeys[method]

  if (params._meta === undefined) {
    // No envelope claim and no modern header: the SDK classifies this a 2025 request ("no-claim").
    if (!keysWithin(params, allowed)) return undefined
    if (version !== undefined && !legacyVersions.has(version)) return undefined
    if (methodHeader !== undefined || nameHeader !== undefined) return undefined
    return { era: "legacy", id: id as string | number, params, version }
  }
  const route = classifyInboundRequest({
    httpMethod: "POST",
    ...(version === undefined ? {} : { protocolVersionHeader: version }),
    ...(methodHeader === undefined ? {} : { mcpMethodHeader: methodHeader }),
    ...(nameHeader === undefined ? {} : { mcpNameHeader: nameHeader }),
    body
  })
  if (route.kind !== "modern" || route.messageKind !== "request") return undefined
  if (route.classification.revision !== modernRevision || version !== modernRevision) return undefined
  if (methodHeader !== method || nameHeader !== name(params)) return undefined
  const meta = params._meta
  for (const key in params) if (key !== "_meta" && !allowed.has(key)) return undefined
  if (!isPlainObject(meta) || !keysWithin(meta, envelopeKeys)) return undefined
  return { era: "modern", id: id as string | number, params, version }
}

/** Whether a 2026-07-28 request's envelope declares URL-mode elicitation. */
const takesUrlRequests = (meta: unknown) => {
  if (!isPlainObject(meta)) return false
  const capabilities = meta[clientCapabilitiesKey]
  return (
    isPlainObject(capabilities) &&
    isPlainObject(capabilities.elicitation) &&
    capabilities.elicitation.url !== undefined
  )
}

/**
 * Recognises a plain `tools/call` of a tool of `catalogue`, given the request's headers and its
 * parsed JSON body, or `undefined` for anything the SDK should answer.
 */
export const fastCallOf = <R>(
  catalogue: FastCatalogue<R>,
  headers: RequestHeaders,
  body: unknown
): FastCall<R> | undefined => {
  const plain = plainRequest("tools/call", headers, body, (params) => params.name as string)
  if (plain === undefined) return undefined
  const { name, arguments: args } = plain.params
  if (typeof name !== "string") return undefined
  const tool = catalogue.tools.get(name)
  if (tool === undefined) return undefined
  // A client that takes URL-mode input requests may be offered a page (server.ts): the SDK's path.
  if (takesUrlRequests(plain.params._meta)) return undefined
  if (args !== undefined && (!isPlainObject(args) || Object.hasOwn(args, "__proto__"))) return undefined
  const idJson = JSON.stringify(plain.id)
  return {
    tool,
    args: args ?? {},
    answer: (unchecked) => {
      const result = checkedOutput(tool, unchecked)
      return plain.era === "legacy"
        ? {
            status: 200,
            headers: sseHeaders,
            body: `event: message\ndata: {"result":${resultJson(result, undefined)},"jsonrpc":"2.0","id":${idJson}}\n\n`
          }
        : {
            status: 200,
            headers: jsonHeaders,
            body: `{"result":${resultJson(result, catalogue.era)},"jsonrpc":"2.0","id":${idJson}}`
          }
    }
  }
}

/**
 * A plain `tools/list`: which of the catalogue's fixed answers it gets (by era and version), its
 * id, and the request that asks the SDK for that answer (with id 0).
 */
export interface FastListing {
  readonly key: string
  readonly id: string | number
  readonly probe: { readonly headers: Record<string, string>; readonly body: string }
}

export const fastListingOf = (headers: RequestHeaders, body: unknown): FastListing | undefined => {
  const plain = plainRequest("tools/list", headers, body, () => undefined)
  if (plain === undefined) return undefined
  const probeHeaders: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream"
  }
  if (plain.version !== undefined) probeHeaders["mcp-protocol-version"] = plain.version
  if (plain.era === "modern") probeHeaders["mcp-method"] = "tools/list"
  return {
    key: `${plain.era} ${plain.version ?? ""}`,
    id: plain.id,
    probe: {
      headers: probeHeaders,
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "tools/list", params: plain.params })
    }
  }
}

/** An answer the SDK gave to a probe (id 0), ready to be given again with another id. */
export interface KeptAnswer {
  readonly headers: Readonly<Record<string, string>>
  readonly before: string
  readonly after: string
}

/** Keeps the SDK's answer to a probe when it is a 200 that ends with the probe's id. */
export const keptAnswer = (
  status: number,
  headers: Readonly<Record<string, string>>,
  text: string
): KeptAnswer | undefined => {
  if (status !== 200) return undefined
  const after = headers["content-type"] === "text/event-stream" ? "}\n\n" : "}"
  const end = `"jsonrpc":"2.0","id":0${after}`
  if (!text.endsWith(end)) return undefined
  return { headers, before: text.slice(0, text.length - after.length - 1), after }
}

export const answerAgain = (kept: KeptAnswer, id: string | number): FastAnswer => ({
  status: 200,
  headers: kept.headers,
  body: `${kept.before}${JSON.stringify(id)}${kept.after}`
})

/** Asking for a listing runs no tool: a session that would refuse to. */
const listingAuth = authInfoOf("", "", {
  run: () => Promise.reject(new Error("a tools/list probe runs no tool"))
})

/** A handler's answers to plain listings, each asked of the SDK once (one it cannot keep leaves them to the SDK). */
export const listingsFor = (handler: McpHttpHandler) => {
  const cache = new Map<string, Promise<KeptAnswer | undefined>>()
  return (listing: FastListing): Promise<KeptAnswer | undefined> => {
    const known = cache.get(listing.key)
    if (known !== undefined) return known
    const asked = handler
      .fetch(new Request("http://localhost/mcp", { method: "POST", ...listing.probe }), {
        authInfo: listingAuth
      })
      .then(async (response) =>
        keptAnswer(response.status, Object.fromEntries(response.headers), await response.text())
      )
      .catch(() => undefined)
    cache.set(listing.key, asked)
    return asked
  }
}
