import { Context, Effect, Result } from "effect"
import type { Caller } from "../../contract/api.ts"
import type { AuthRequired, KeyRequired, Unauthorized } from "../../contract/errors.ts"
import type { Governor } from "../../domain/accounts.ts"
import type { MeteredCaller } from "../../metering/meterDataCall.ts"
import type { Bearers } from "../common/bearers.ts"

/**
 * Who an MCP request's bearer stands for. A spend key is a caller; a management token is an
 * identity (management tools) and, when it governs exactly one active account, also a caller.
 */
export interface Bearer {
  /**
   * Whom data tools run as; the failure (several accounts, a suspended one) is their answer. As
   * resolved it may be unconfirmed (`Principal.unconfirmed`): only a tool that `confirmsCaller` runs
   * as it is, anything else as `confirmedBearer` makes it.
   */
  readonly caller: Result.Result<MeteredCaller, AuthRequired | Unauthorized>
  readonly governor: Governor | undefined
  /** The client's address, as every per-IP rule counts it. */
  readonly ip: string
}

export class McpBearer extends Context.Service<McpBearer, Bearer>()("surfaces/mcp/McpBearer") {}

/**
 * Resolves a request's bearer for one MCP mount (`resource`, its URL: an access token is for one
 * mount only), a spend key from memory unconfirmed; a failure refuses the connection (401 with a
 * challenge). A management token that cannot spend still connects: its management tools work with
 * `account_id`.
 */
export const resolveBearer = (
  bearers: typeof Bearers.Service,
  secret: string,
  ip: string,
  resource: string
): Effect.Effect<Bearer, KeyRequired | Unauthorized | AuthRequired> =>
  Effect.map(bearers.resolveUnconfirmed(secret, { resource }), (found) => ({
    governor: found.governor,
    ip,
    caller: Result.map(found.principal, (principal) => ({ ...principal, ip }))
  }))

/**
 * The bearer with its caller confirmed: as it was, or as the database has it now, or UNAUTHORIZED
 * (refusing the connection) when its key can no longer spend.
 */
export const confirmedBearer = (bearer: Bearer): Effect.Effect<Bearer, Unauthorized> => {
  if (Result.isFailure(bearer.caller)) return Effect.succeed(bearer)
  const { unconfirmed, ...held } = bearer.caller.success
  if (unconfirmed === undefined) return Effect.succeed(bearer)
  return Effect.map(unconfirmed.confirm, (fresh): Bearer => {
    const caller: typeof Caller.Service = fresh === undefined ? held : { ...fresh, ip: held.ip }
    return { ...bearer, caller: Result.succeed(caller) }
  })
}

/**
 * The bearer, its caller unconfirmed, telling `refused` when confirming the caller finds that its
 * key can no longer spend: the route answers that as it answers any bearer it refuses (401 with a
 * challenge), not as the tool's error.
 */
export const watchedBearer = (bearer: Bearer, refused: (failure: Unauthorized) => void): Bearer => {
  if (Result.isFailure(bearer.caller)) return bearer
  const caller = bearer.caller.success
  const { unconfirmed } = caller
  if (unconfirmed === undefined) return bearer
  const watch = <A>(effect: Effect.Effect<A, Unauthorized>) =>
    Effect.tapError(effect, (failure) => Effect.sync(() => refused(failure)))
  return {
    ...bearer,
    caller: Result.succeed({
      ...caller,
      unconfirmed: {
        versions: unconfirmed.versions,
        confirm: watch(unconfirmed.confirm),
        reread: watch(unconfirmed.reread)
      }
    })
  }
}
