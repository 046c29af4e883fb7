import type { Account, KeyRecord } from "./accounts.ts"
import type { Platform } from "./plans.ts"
import { dayOf, msPerDay } from "./time.ts"

/**
 * A key's limits as its owner sets them: a spend cap per UTC day, UTC calendar month or in total,
 * an expiry and the platforms it may call. The cap itself is held by the database's charging
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

/** The platforms a key may call: the account's, narrowed to the key's own list when it has one. */
export const platformsOf = (account: Account, key: KeyRecord): ReadonlyArray<Platform> =>
  key.platforms === undefined
    ? account.entitlements
    : account.entitlements.filter((platform) => key.platforms?.includes(platform))

export const capResetsAtIso = (period: CapPeriod, now: number): string | undefined => {
  const at = capResetsAt(period, now)
  return at === undefined ? undefined : new Date(at).toISOString()
}

/** A key's limits as stored: epoch ms for the expiry; null for none. */
export interface KeyLimits {
  readonly spendCapCredits: number | null
  readonly capPeriod: CapPeriod
  readonly expiresAt: number | null
  readonly platforms: ReadonlyArray<Platform> | null
}

export const noLimits: KeyLimits = {
  spendCapCredits: null,
  capPeriod: "total",
  expiresAt: null,
  platforms: null
}

/** A change of limits: an absent field stays as it is, `null` clears it. */
export interface LimitChanges {
  readonly spendCapCredits?: number | null
  readonly capPeriod?: CapPeriod
  readonly expiresAt?: number | null
  readonly platforms?: ReadonlyArray<Platform> | null
}

/** Why limits cannot be set, and which field is at fault. */
export interface LimitRefusal {
  readonly param: "spend_cap_credits" | "cap_period" | "expires_at" | "platforms" | "key_id"
  readonly message: string
}

export const applyChanges = (limits: KeyLimits, changes: LimitChanges): KeyLimits => ({
  spendCapCredits: changes.spendCapCredits === undefined ? limits.spendCapCredits : changes.spendCapCredits,
  capPeriod: changes.capPeriod ?? limits.capPeriod,
  expiresAt: changes.expiresAt === undefined ? limits.expiresAt : changes.expiresAt,
  platforms: changes.platforms === undefined ? limits.platforms : changes.platforms
})

/** Limits any key may have: an expiry still ahead, and platforms the account is entitled to. */
export const refuseLimits = (
  limits: KeyLimits,
  account: Pick<Account, "entitlements">,
  now: number
): LimitRefusal | undefined => {
  if (limits.expiresAt !== null && limits.expiresAt <= now)
    return { param: "expires_at", message: "`expires_at` must be in the future (RFC 3339, UTC)." }
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
 * A child key's limits inside its parent's: a cap (required) no larger than what the parent's cap
 * has left, platforms among the parent's, and an expiry no later than the parent's (the parent's
 * when none is asked for).
 */
export const childLimits = (
  asked: KeyLimits,
  parent: {
    readonly capLeft: number | undefined
    readonly platforms: ReadonlyArray<Platform>
    readonly expiresAt: number | undefined
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
  if (parent.expiresAt !== undefined && asked.expiresAt !== null && asked.expiresAt > parent.expiresAt)
    return {
      param: "expires_at",
      message: `A child key must expire by its parent's expiry, ${new Date(parent.expiresAt).toISOString()}.`
    }
  return {
    ...asked,
    platforms: asked.platforms ?? [...parent.platforms],
    expiresAt: asked.expiresAt ?? parent.expiresAt ?? null
  }
}
