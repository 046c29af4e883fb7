import type { Pack, Plan } from "./plans.ts"

/**
 * The numbers of the product: budgets, plan limits, caps, ages and packs. Each is a
 * default an operator can change through configuration (`AppConfig.policy`, read from the
 * environment); nothing else in the code repeats them.
 */
export interface Policy {
  /** The free budget every trial key of one IP shares, per UTC day. */
  readonly freeCreditsPerIpDay: number
  readonly ratePerMinute: Readonly<Record<Plan, number>>
  /** The largest search page a trial key may ask for. */
  readonly trialSearchLimit: number
  /** Credits granted when an account is claimed by email. */
  readonly claimGrantCredits: number
  /** Keys one IP may mint per hour. */
  readonly mintPerIpHour: number
  /** Checkouts one IP may start per hour without a credential (keyless, or naming an account on `/upgrade`). */
  readonly checkoutsPerIpHour: number
  /** Checkouts one account may have started per hour with a credential (spend key, management token). */
  readonly checkoutsPerAccountHour: number
  /**
   * How long an unpaid checkout session on the local rail, and a billing-portal link, are kept past
   * their expiry before housekeeping deletes them. Nothing can use either once expired.
   */
  readonly checkoutKeepMs: number
  /**
   * The same for an unpaid Stripe checkout session: Stripe can still report a payment after the
   * session's expiry (a delayed payment method, a webhook it retries for days).
   */
  readonly stripeCheckoutKeepMs: number
  /** How long a stored idempotent result is replayed, then how long its tombstone answers NOT_FOUND. */
  readonly replayWindowMs: number
  readonly tombstoneMs: number
  /** `recent` serves copies younger than this; copies are kept this long for fallback. */
  readonly cacheRecentMs: number
  readonly cacheKeepMs: number
  /** Upstream copies kept in memory per instance, in bytes of their JSON. */
  readonly cacheMemoryBytes: number
  /** The packs every offer lists. */
  readonly packs: ReadonlyArray<Pack>
}

const hour = 3_600_000
const day = 24 * hour

export const defaultPolicy: Policy = {
  freeCreditsPerIpDay: 200,
  ratePerMinute: { trial: 30, flex: 120, production: 600 },
  trialSearchLimit: 10,
  claimGrantCredits: 10_000,
  mintPerIpHour: 5,
  checkoutsPerIpHour: 10,
  checkoutsPerAccountHour: 30,
  checkoutKeepMs: day,
  stripeCheckoutKeepMs: 30 * day,
  replayWindowMs: day,
  tombstoneMs: 7 * day,
  cacheRecentMs: 6 * hour,
  cacheKeepMs: 7 * day,
  cacheMemoryBytes: 16 * 1024 * 1024,
  packs: [
    { pack: "flex", mode: "one_time", price_usd_cents: 2_000, credits: 10_000 },
    { pack: "production", mode: "subscription", price_usd_cents: 9_900, credits_per_month: 75_000 }
  ]
}
