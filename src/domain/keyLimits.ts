import type { Account, KeyRecord } from "./accounts.ts"
import type { Platform } from "./plans.ts"
import { dayOf, msPerDay } from "./time.ts"

/**
 * A key's limits as its owner sets them: a spend cap per UTC day, UTC calendar month or in total,
 * and the platforms it may call (a spend key does not expire: it ends when it is revoked). The cap itself is held by the database's charging
 * functions (`svc_key_cap`); here are the shapes and the calendar.
 */
export type CapPeriod = "day" | "month" | "total"
export const capPeriods = ["day", "month", "total"] as const satisfies ReadonlyArray<CapPeriod>

/** When a cap of `period` next starts afresh after `now` (UTC midnight, the first of next month); undefined for `total`. */
export const capResetsAt = (period: CapPeriod, now: number): number | undefined => {
  if (period === "total") return undefined
  if (period === "day") return (dayOf(now) + 1) * msPerDay
  const date = new Date(now)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1)
}

/**
 * The platforms a key may call: the account's, narrowed to the key's own list when it has one (a
 * child key's list is already its parent's current one intersected with its own, `Accounts.findByKey`).
 */
export const platformsOf = (account: Account, key: KeyRecord): ReadonlyArray<Platform> =>
  key.platforms === undefined
    ? account.entitlements
    : account.entitlements.filter((platform) => key.platforms?.includes(platform))

export const capResetsAtIso = (period: CapPeriod, now: number): string | undefined => {
  const at = capResetsAt(period, now)
  return at === undefined ? undefined : new Date(at).toISOString()
}

/** A key's limits as stored; null for none. */
export interface KeyLimits {
  readonly spendCapCredits: number | null
  readonly capPeriod: CapPeriod
  readonly platforms: ReadonlyArray<Platform> | null
}

export const noLimits: KeyLimits = {
  spendCapCredits: null,
  capPeriod: "total",
  platforms: null
}

/** A change of limits: an absent field stays as it is, `null` clears it. */
export interface LimitChanges {
  readonly spendCapCredits?: number | null
  readonly capPeriod?: CapPeriod
  readonly platforms?: ReadonlyArray<Platform> | null
}

/** Why limits cannot be set, and which field is at fault. */
export interface LimitRefusal {
  readonly param: "spend_cap_credits" | "cap_period" | "platforms" | "key_id"
  readonly message: string
}

export const applyChanges = (limits: KeyLimits, changes: LimitChanges): KeyLimits => ({
  spendCapCredits: changes.spendCapCredits === undefined ? limits.spendCapCredits : changes.spendCapCredits,
  capPeriod: changes.capPeriod ?? limits.capPeriod,
  platforms: changes.platforms === undefined ? limits.platforms : changes.platforms
})

/** Limits any key may have: platforms the account is entitled to. */
export const refuseLimits = (
  limits: KeyLimits,
  account: Pick<Account, "entitlements">
): LimitRefusal | undefined => {
  if (limits.platforms !== null) {
    if (limits.platforms.length === 0)
      return {
        param: "platforms",
        message: "`platforms` must name at least one platform, or be null for all."
      }
    const outside = limits.platforms.filter((platform) => !account.entitlements.includes(platform))
    if (outside.length > 0)
      return {
        param: "platforms",
        message: `This account is not enabled for ${outside.join(" and ")}; a key may have ${account.entitlements.join(", ")}.`
      }
  }
  return undefined
}

/**
 * A child key's limits inside its parent's, as its parent makes or changes them: a cap (required) no
 * larger than what the parent's cap has left, and platforms among the parent's (the parent's when
 * none is asked for). At every call the child is held to its parent's current platforms and cap
 * too, whatever they became since.
 */
export const childLimits = (
  asked: KeyLimits,
  parent: {
    readonly capLeft: number | undefined
    readonly platforms: ReadonlyArray<Platform>
  }
): KeyLimits | LimitRefusal => {
  if (asked.spendCapCredits === null)
    return {
      param: "spend_cap_credits",
      message: "A child key needs `spend_cap_credits` (an integer, 1 or more)."
    }
  if (parent.capLeft !== undefined && asked.spendCapCredits > parent.capLeft)
    return {
      param: "spend_cap_credits",
      message: `A child's cap must fit in what its parent's cap has left: ${parent.capLeft} credits.`
    }
  const outside = (asked.platforms ?? []).filter((platform) => !parent.platforms.includes(platform))
  if (outside.length > 0)
    return {
      param: "platforms",
      message: `The parent key may not call ${outside.join(" and ")}; a child may have ${parent.platforms.join(", ")}.`
    }
  return { ...asked, platforms: asked.platforms ?? [...parent.platforms] }
}
