/** Plans, their per-minute limits and trial caps (decisions.md, "Plans, limits and money"). */
export type Plan = "trial" | "flex" | "production"
export const plans = ["trial", "flex", "production"] as const satisfies ReadonlyArray<Plan>

export type Platform = "profnet" | "forum" | "microblog"
export const platforms = ["profnet", "forum", "microblog"] as const satisfies ReadonlyArray<Platform>

export const ratePerMinute: Record<Plan, number> = { trial: 30, flex: 120, production: 600 }

export const isPaid = (plan: Plan): boolean => plan !== "trial"

export const trialCaps = {
  searchLimit: 10,
  realtime: false,
  firstPageOnly: true
} as const

export const freeTier = {
  creditsPerIpDay: 200,
  freshness: "recent",
  firstPageOnly: true
} as const

export const claimGrantCredits = 10_000

/** Packs offered for payment-fixable errors. */
export interface Pack {
  readonly pack: "flex" | "production"
  readonly mode: "one_time" | "subscription"
  readonly price_usd_cents: number
  readonly credits?: number
  readonly credits_per_month?: number
}

export const packs: ReadonlyArray<Pack> = [
  { pack: "flex", mode: "one_time", price_usd_cents: 2_000, credits: 10_000 },
  { pack: "production", mode: "subscription", price_usd_cents: 9_900, credits_per_month: 75_000 }
]
