import { Context, Effect, Result } from "effect"
import type { Caller } from "../../contract/api.ts"
import type { AuthRequired, KeyRequired, Unauthorized } from "../../contract/errors.ts"
import type { Governor } from "../../domain/accounts.ts"
import type { Bearers } from "../../identity/Bearers.ts"

/**
 * Who an MCP request's bearer stands for. A spend key is a caller; a management token is an
 * identity (management tools) and, when it governs exactly one active account, also a caller.
 */
export interface Bearer {
  /** Whom data tools run as; the failure (several accounts, a suspended one) is their answer. */
  readonly caller: Result.Result<typeof Caller.Service, AuthRequired | Unauthorized>
  readonly governor: Governor | undefined
  /** The client's address, as every per-IP rule counts it. */
  readonly ip: string
}

export class McpBearer extends Context.Service<McpBearer, Bearer>()("surfaces/mcp/McpBearer") {}

/**
 * Resolves a request's bearer for one MCP mount (`resource`, its URL: an access token is for one
 * mount only); a failure refuses the connection (401 with a challenge). A management token that
 * cannot spend still connects: its management tools work with `account_id`.
 */
export const resolveBearer = (
  bearers: typeof Bearers.Service,
  secret: string,
  ip: string,
  resource: string
): Effect.Effect<Bearer, KeyRequired | Unauthorized | AuthRequired> =>
  Effect.map(bearers.resolve(secret, { resource }), (found) => ({
    governor: found.governor,
    ip,
    caller: Result.map(found.principal, (principal) => ({ ...principal, ip }))
  }))
