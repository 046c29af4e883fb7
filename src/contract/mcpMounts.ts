import { links } from "../config.ts"
import { type Platform, platforms } from "../domain/plans.ts"

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

/** A mount's URL: what an OAuth access token for it names as its resource. */
export const mountUrl = (baseUrl: string, mount: McpMount) =>
  `${links(baseUrl).mcp}${mount.path.slice(mcpPath.length)}`
