import { links } from "../../config.ts"
import { type Platform, platforms } from "../../domain/plans.ts"
import type { McpTool } from "./tools.ts"

/** One MCP endpoint: every tool at `/mcp`, one platform's (plus `get_usage`) at `/mcp/<platform>`. */
export interface McpMount {
  readonly path: `/${string}`
  readonly platform: Platform | undefined
}

/** The path of `links(baseUrl).mcp`. */
export const mcpPath = "/mcp" as const

export const mcpMounts: ReadonlyArray<McpMount> = [
  { path: mcpPath, platform: undefined },
  ...platforms.map((platform): McpMount => ({ path: `${mcpPath}/${platform}`, platform }))
]

export const mountUrl = (baseUrl: string, mount: McpMount) =>
  `${links(baseUrl).mcp}${mount.path.slice(mcpPath.length)}`

export const mountTools = <R>(mount: McpMount, tools: ReadonlyArray<McpTool<R>>) =>
  tools.filter(
    (tool) => mount.platform === undefined || tool.platform === undefined || tool.platform === mount.platform
  )
