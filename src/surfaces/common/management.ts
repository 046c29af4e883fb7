import { Effect } from "effect"
import { Unauthorized, UpstreamUnavailable } from "../../contract/errors.ts"
import type { Governor } from "../../domain/accounts.ts"
import { Checkout } from "../../payments/Checkout.ts"
import { PaymentRails } from "../../payments/PaymentRail.ts"
import { Keys } from "../../services/Keys.ts"
import { selectAccount } from "./bearers.ts"

/**
 * The management surface's steps (spec rule 7), once for REST and MCP: choose the account the
 * sign-in governs (`account_id`, or the only one), then act on it.
 */

type AccountArgs = { readonly account_id?: string | undefined }

/** The chosen account, for a change: a suspended account's keys, alert and billing stay as they are. */
const changeable = (governor: Governor, accountId: string | undefined) =>
  Effect.flatMap(selectAccount(governor, accountId), (account) =>
    account.state === "active"
      ? Effect.succeed(account)
      : Effect.fail(
          new Unauthorized({
            message: `Account ${account.id} is suspended: its keys, alert and billing cannot change. Write to the operator.`
          })
        )
  )

export const listKeys = (governor: Governor, args: AccountArgs) =>
  Effect.gen(function* () {
    const account = yield* selectAccount(governor, args.account_id)
    return { account_id: account.id, keys: yield* (yield* Keys).list(account.id) }
  })

export const createKey = (governor: Governor, args: AccountArgs & { readonly label?: string | undefined }) =>
  Effect.gen(function* () {
    const account = yield* changeable(governor, args.account_id)
    return yield* (yield* Keys).create({ account, email: governor.email, label: args.label ?? null })
  })

export const rotateKey = (governor: Governor, args: AccountArgs & { readonly key_id: string }) =>
  Effect.gen(function* () {
    const account = yield* changeable(governor, args.account_id)
    return yield* (yield* Keys).rotate(account.id, args.key_id)
  })

export const revokeKey = (governor: Governor, args: AccountArgs & { readonly key_id: string }) =>
  Effect.gen(function* () {
    const account = yield* changeable(governor, args.account_id)
    return yield* (yield* Keys).revoke(account.id, args.key_id)
  })

export const setBalanceAlert = (governor: Governor, args: AccountArgs & { readonly threshold: number }) =>
  Effect.gen(function* () {
    const account = yield* changeable(governor, args.account_id)
    return { account_id: account.id, ...(yield* (yield* Keys).setAlert(account.id, args.threshold)) }
  })

/** The provider's billing portal for one of its customers (Stripe), else the service's own `/portal` link. */
export const billingPortal = (governor: Governor, args: AccountArgs) =>
  Effect.gen(function* () {
    const account = yield* changeable(governor, args.account_id)
    for (const rail of (yield* PaymentRails).values()) {
      const url = yield* rail.portal(account.id).pipe(
        Effect.catchTag("RailUnavailable", (failure) =>
          Effect.fail(
            new UpstreamUnavailable({
              message: `The ${failure.rail} billing portal did not answer (${failure.message}). Retry in a minute.`,
              retry_after_seconds: 60
            })
          )
        )
      )
      if (url !== undefined) return { account_id: account.id, url }
    }
    return { account_id: account.id, url: yield* (yield* Checkout).portalLink(account.id) }
  })
