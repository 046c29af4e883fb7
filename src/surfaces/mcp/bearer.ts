import type { CallToolResult } from "@modelcontextprotocol/server"
import { Context, Effect, Result } from "effect"
import type { AppConfig } from "../../config.ts"
import { Caller } from "../../contract/api.ts"
import type { AuthRequired, KeyRequired, Unauthorized } from "../../contract/errors.ts"
import type { Governor } from "../../domain/accounts.ts"
import { managementTokenPattern, spendKeyPattern } from "../../domain/secrets.ts"
import type { OAuthServer } from "../../oauth/OAuthServer.ts"
import type { Ids } from "../../services/Ids.ts"
import type { Identity, Principal } from "../common/identity.ts"
import { governedPrincipal } from "../common/identity.ts"
import { toToolResult } from "./toolResults.ts"
import type { McpTool } from "./tools.ts"

/**
 * Who an MCP request's bearer stands for. A spend key is a caller; a management token is an
 * identity (management tools) and, when it governs exactly one active account, also a caller.
 */
export interface Bearer {
  /** Whom data tools run as; the failure (several accounts, a suspended one) is their answer. */
  readonly caller: Result.Result<typeof Caller.Service, AuthRequired | Unauthorized>
  readonly governor: Governor | undefined
}

export class McpBearer extends Context.Service<McpBearer, Bearer>()("app/McpBearer") {}

/**
 * An OAuth access token's principal: its connected app stands in for a key (the app id is the
 * receipt's `key_id`, so receipts name the app), on the account that consented.
 */
const appPrincipal = (oauth: typeof OAuthServer.Service, token: string, resource: string) =>
  Effect.map(
    oauth.authenticate(token, resource),
    (holder): Principal => ({
      key: { id: holder.appId, accountId: holder.account.id, hint: holder.clientName, revoked: false },
      account: holder.account
    })
  )

/** Not a key or a management token by its shape: an OAuth access token (opaque, looked up). */
const isAccessToken = (secret: string) =>
  secret.length > 0 &&
  !spendKeyPattern.test(secret) &&
  !managementTokenPattern.test(secret) &&
  !secret.startsWith("svc")

/**
 * Resolves a request's bearer for one MCP mount (`resource`, its URL: an access token is for one
 * mount only); a failure refuses the connection (401 with a challenge). A management token that
 * cannot spend still connects: its management tools work with `account_id`.
 */
export const resolveBearer = (
  identity: typeof Identity.Service,
  oauth: typeof OAuthServer.Service,
  secret: string,
  ip: string,
  resource: string
): Effect.Effect<Bearer, KeyRequired | Unauthorized | AuthRequired> =>
  isAccessToken(secret)
    ? Effect.map(appPrincipal(oauth, secret, resource), (principal) => ({
        governor: undefined,
        caller: Result.succeed({ ...principal, ip })
      }))
    : managementTokenPattern.test(secret)
      ? Effect.gen(function* () {
          const governor = yield* identity.governor(secret)
          const principal = yield* Effect.result(governedPrincipal(governor))
          return { governor, caller: Result.map(principal, (found) => ({ ...found, ip })) }
        })
      : Effect.map(identity.authenticate(secret), (principal) => ({
          governor: undefined,
          caller: Result.succeed({ ...principal, ip })
        }))

/** A data tool run as the bearer's caller, or answering why the bearer cannot spend. */
export const callingAsBearer = <R>(
  tool: McpTool<R>
): McpTool<Exclude<R, Caller> | McpBearer | AppConfig | Ids> => ({
  ...tool,
  call: (args) =>
    Effect.flatMap(
      McpBearer,
      ({ caller }): Effect.Effect<CallToolResult, never, Exclude<R, Caller> | AppConfig | Ids> =>
        Result.isFailure(caller)
          ? toToolResult(Effect.fail(caller.failure))
          : Effect.provideService(tool.call(args), Caller, caller.success)
    )
})
