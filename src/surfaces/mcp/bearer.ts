import { Context, Effect, Result } from "effect"
import type { AppConfig } from "../../config.ts"
import { Caller } from "../../contract/api.ts"
import type { AuthRequired, KeyRequired, Unauthorized } from "../../contract/errors.ts"
import type { Governor } from "../../domain/accounts.ts"
import { managementTokenPattern } from "../../domain/secrets.ts"
import type { Ids } from "../../services/Ids.ts"
import type { Identity } from "../common/identity.ts"
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
 * Resolves a request's bearer; a failure refuses the connection (401 with a challenge). A
 * management token that cannot spend still connects: its management tools work with `account_id`.
 */
export const resolveBearer = (
  identity: typeof Identity.Service,
  secret: string,
  ip: string
): Effect.Effect<Bearer, KeyRequired | Unauthorized | AuthRequired> =>
  managementTokenPattern.test(secret)
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
    Effect.gen(function* () {
      const { caller } = yield* McpBearer
      if (Result.isFailure(caller)) return yield* toToolResult(Effect.fail(caller.failure))
      return yield* Effect.provideService(tool.call(args), Caller, caller.success)
    })
})
