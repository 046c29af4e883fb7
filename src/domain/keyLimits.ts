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
