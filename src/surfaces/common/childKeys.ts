import { Effect } from "effect"
import type { Caller } from "../../contract/api.ts"
import type { Platform } from "../../domain/plans.ts"
import { asOrigin } from "../../services/Audit.ts"
import { Keys } from "../../services/Keys.ts"
import { type LimitArgs, limitsOf } from "./management.ts"

/**
 * Child keys (an agent handing a sub-agent a bounded key), once for REST and MCP: the bearer is the
 * parent spend key, which its owner let delegate (`may_delegate`); the rules are `Keys`'.
 */

/** A child key's changes are the parent key's (or connected app's) own, in the audit log. */
const asParent = (caller: Caller["Service"]) =>
  asOrigin({
    actor: { kind: caller.key.id.startsWith("app_") ? "app" : "key", id: caller.key.id },
    ip: caller.ip
  })

export const createChildKey = (
  caller: Caller["Service"],
  args: LimitArgs & { readonly label?: string | undefined; readonly spend_cap_credits: number }
) =>
  asParent(caller)(
    Effect.flatMap(Keys, (keys) =>
      keys.createChild(caller, { label: args.label ?? null, limits: limitsOf(args) })
    )
  )

export const listChildKeys = (caller: Caller["Service"]) =>
  Effect.map(
    Effect.flatMap(Keys, (keys) => keys.children(caller.key)),
    (keys) => ({ parent_key_id: caller.key.id, keys })
  )

export const revokeChildKey = (caller: Caller["Service"], args: { readonly key_id: string }) =>
  asParent(caller)(Effect.flatMap(Keys, (keys) => keys.revokeChild(caller.key, args.key_id)))

export const updateChildKey = (
  caller: Caller["Service"],
  args: {
    readonly key_id: string
    readonly spend_cap_credits?: number | undefined
    readonly platforms?: ReadonlyArray<Platform> | null | undefined
  }
) =>
  asParent(caller)(
    Effect.flatMap(Keys, (keys) =>
      keys.updateChild(caller, args.key_id, {
        ...(args.spend_cap_credits === undefined ? {} : { spendCapCredits: args.spend_cap_credits }),
        ...(args.platforms === undefined ? {} : { platforms: args.platforms })
      })
    )
  )
