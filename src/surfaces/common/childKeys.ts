import { Effect } from "effect"
import type { Caller } from "../../contract/api.ts"
import { asOrigin } from "../../services/Audit.ts"
import { Keys } from "../../services/Keys.ts"
import { type LimitArgs, limitsOf } from "./management.ts"

/**
 * Child keys (an agent handing a sub-agent a bounded key), once for REST and MCP: the bearer is the
 * parent spend key; the rules are `Keys.createChild`'s.
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
  Effect.gen(function* () {
    const limits = yield* limitsOf(args)
    return yield* (yield* Keys).createChild(caller, { label: args.label ?? null, limits })
  }).pipe(asParent(caller))

export const listChildKeys = (caller: Caller["Service"]) =>
  Effect.map(
    Effect.flatMap(Keys, (keys) => keys.children(caller.key)),
    (keys) => ({ parent_key_id: caller.key.id, keys })
  )

export const revokeChildKey = (caller: Caller["Service"], args: { readonly key_id: string }) =>
  asParent(caller)(Effect.flatMap(Keys, (keys) => keys.revokeChild(caller.key, args.key_id)))
