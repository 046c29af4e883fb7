import { Effect } from "effect"
import { Unauthorized } from "../../contract/errors.ts"
import type { Governor } from "../../domain/accounts.ts"
import { type Principal, selectAccount } from "./identity.ts"

/**
 * The principal a management token spends as (spec rule 3): only when its identity governs exactly
 * one account, which must be active; the token stands in for a key (its id is the receipt's key).
 * Several accounts are AUTH_REQUIRED listing them, as for any management request without
 * `account_id`.
 */
export const governedPrincipal = (governor: Governor) =>
  Effect.gen(function* () {
    const account = yield* selectAccount(governor, undefined)
    if (account.state !== "active")
      return yield* new Unauthorized({ message: "The account of this sign-in is suspended." })
    const principal: Principal = {
      key: { id: governor.tokenId, accountId: account.id, hint: governor.hint, revoked: false },
      account
    }
    return principal
  })
