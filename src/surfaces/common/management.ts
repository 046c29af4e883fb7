import { Effect } from "effect"
import { InvalidInput, Unauthorized, UpstreamUnavailable } from "../../contract/errors.ts"
import type { Governor } from "../../domain/accounts.ts"
import { type CapPeriod, type KeyLimits, type LimitChanges, noLimits } from "../../domain/keyLimits.ts"
import type { Platform } from "../../domain/plans.ts"
import { selectAccount } from "../../identity/Bearers.ts"
import { Checkout } from "../../payments/Checkout.ts"
import { PaymentRails } from "../../payments/PaymentRail.ts"
import { Topups } from "../../payments/Topups.ts"
import { Audit } from "../../services/Audit.ts"
import { Keys } from "../../services/Keys.ts"
import { Webhooks } from "../../webhooks/Webhooks.ts"

/**
 * The management surface's steps (spec rule 7), once for REST and MCP: choose the account the
 * sign-in governs (`account_id`, or the only one), then act on it.
 */

type AccountArgs = { readonly account_id?: string | undefined }

/** A key's limits as a request carries them: absent leaves a field as it is, `null` clears it. */
export interface LimitArgs {
  readonly spend_cap_credits?: number | null | undefined
  readonly cap_period?: CapPeriod | undefined
  readonly platforms?: ReadonlyArray<Platform> | null | undefined
}

/** The changes a request asks for. */
export const limitChangesOf = (args: LimitArgs): LimitChanges => ({
  ...(args.spend_cap_credits === undefined ? {} : { spendCapCredits: args.spend_cap_credits }),
  ...(args.cap_period === undefined ? {} : { capPeriod: args.cap_period }),
  ...(args.platforms === undefined ? {} : { platforms: args.platforms })
})

/** A new key's limits: what the request asks, the defaults (no limit) otherwise. */
export const limitsOf = (args: LimitArgs): KeyLimits => {
  const changes = limitChangesOf(args)
  return {
    spendCapCredits: changes.spendCapCredits ?? noLimits.spendCapCredits,
    capPeriod: changes.capPeriod ?? noLimits.capPeriod,
    platforms: changes.platforms ?? noLimits.platforms
  }
}

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

/** `may_delegate` as a request carries it: the owner's grant of making child keys. */
type DelegationArgs = { readonly may_delegate?: boolean | undefined }

export const createKey = (
  governor: Governor,
  args: AccountArgs & LimitArgs & DelegationArgs & { readonly label?: string | undefined }
) =>
  Effect.gen(function* () {
    const account = yield* changeable(governor, args.account_id)
    return yield* (yield* Keys).create({
      account,
      email: governor.email,
      label: args.label ?? null,
      limits: limitsOf(args),
      mayDelegate: args.may_delegate === true
    })
  })

export const updateKey = (
  governor: Governor,
  args: AccountArgs & LimitArgs & DelegationArgs & { readonly key_id: string }
) =>
  Effect.gen(function* () {
    const account = yield* changeable(governor, args.account_id)
    return yield* (yield* Keys).update(account, args.key_id, {
      ...limitChangesOf(args),
      ...(args.may_delegate === undefined ? {} : { mayDelegate: args.may_delegate })
    })
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

export const listWebhooks = (governor: Governor, args: AccountArgs) =>
  Effect.gen(function* () {
    const account = yield* selectAccount(governor, args.account_id)
    return { account_id: account.id, webhooks: yield* (yield* Webhooks).list(account.id) }
  })

export const createWebhook = (
  governor: Governor,
  args: AccountArgs & { readonly url: string; readonly events: ReadonlyArray<string> }
) =>
  Effect.gen(function* () {
    const account = yield* changeable(governor, args.account_id)
    return yield* (yield* Webhooks).create(account.id, { url: args.url, events: args.events })
  })

export const deleteWebhook = (governor: Governor, args: AccountArgs & { readonly webhook_id: string }) =>
  Effect.gen(function* () {
    const account = yield* changeable(governor, args.account_id)
    return yield* (yield* Webhooks).remove(account.id, args.webhook_id)
  })

export const testWebhook = (governor: Governor, args: AccountArgs & { readonly webhook_id: string }) =>
  Effect.gen(function* () {
    const account = yield* changeable(governor, args.account_id)
    return yield* (yield* Webhooks).test(account.id, args.webhook_id)
  })

export const webhookDeliveries = (
  governor: Governor,
  args: AccountArgs & { readonly webhook_id: string; readonly limit?: number | undefined }
) =>
  Effect.gen(function* () {
    const account = yield* selectAccount(governor, args.account_id)
    return yield* (yield* Webhooks).deliveries(account.id, args.webhook_id, args.limit ?? 50)
  })

export const showTopup = (governor: Governor, args: AccountArgs) =>
  Effect.gen(function* () {
    const account = yield* selectAccount(governor, args.account_id)
    return yield* (yield* Topups).show(account.id)
  })

/** `{ enabled: false }` disarms; otherwise the line and the monthly maximum arm it (the pack: flex unless named). */
export const setTopup = (
  governor: Governor,
  args: AccountArgs & {
    readonly enabled?: boolean | undefined
    readonly pack?: string | undefined
    readonly below_credits?: number | undefined
    readonly monthly_max_usd_cents?: number | undefined
  }
) =>
  Effect.gen(function* () {
    const account = yield* changeable(governor, args.account_id)
    const topups = yield* Topups
    if (args.enabled === false) return yield* topups.disarm(account.id)
    if (args.below_credits === undefined)
      return yield* new InvalidInput({
        message:
          'Send below_credits (a charge that leaves fewer spendable credits buys a pack) and monthly_max_usd_cents, or { "enabled": false } to disarm.',
        param: "below_credits"
      })
    if (args.monthly_max_usd_cents === undefined)
      return yield* new InvalidInput({
        message: "Send monthly_max_usd_cents: the most automatic top-ups may cost in a UTC month.",
        param: "monthly_max_usd_cents"
      })
    return yield* topups.arm(account.id, {
      pack: args.pack ?? "flex",
      below_credits: args.below_credits,
      monthly_max_usd_cents: args.monthly_max_usd_cents
    })
  })

/** The account's audit log, newest first, a page at a time (50 events unless `limit` says). */
export const listAuditEvents = (
  governor: Governor,
  args: AccountArgs & { readonly limit?: number | undefined; readonly cursor?: string | undefined }
) =>
  Effect.gen(function* () {
    const account = yield* selectAccount(governor, args.account_id)
    const page = yield* (yield* Audit).list(account.id, { limit: args.limit ?? 50, cursor: args.cursor })
    return { account_id: account.id, ...page }
  })
