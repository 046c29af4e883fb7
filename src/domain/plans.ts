/** Plans and platforms; their numbers are in `policy.ts`. */
export type Plan = "trial" | "flex" | "production"
export const plans = ["trial", "flex", "production"] as const satisfies ReadonlyArray<Plan>

export type Platform = "profnet" | "forum" | "microblog"
export const platforms = ["profnet", "forum", "microblog"] as const satisfies ReadonlyArray<Platform>

export const isPaid = (plan: Plan): boolean => plan !== "trial"

/** What a free key gets: recent (cached) data, first pages only. */
export const freeTier = {
  freshness: "recent",
  firstPageOnly: true
} as const

/** The free tier's budget as one clause: `freeTierSentence` opens with it, TRIAL_CAP_EXCEEDED's message too. */
export const freeBudgetClause = (creditsPerIpDay: number) =>
  `Free keys from one IP share ${creditsPerIpDay} credits per UTC day`

/** Who may ask for a cursor page (`freeTier.firstPageOnly`), as the paged operations' descriptions say it. */
export const cursorPagesFor = freeTier.firstPageOnly
  ? "paid keys only; trial keys get first pages"
  : "any key"

/**
 * The free tier in one sentence, as the mint's note, the landing page, the upgrade page and the
 * error codes page say it: the IP's daily budget (`policy.freeCreditsPerIpDay`) and `freeTier`.
 */
export const freeTierSentence = (creditsPerIpDay: number) =>
  `${freeBudgetClause(creditsPerIpDay)}, ${freeTier.freshness} (cached) data${
    freeTier.firstPageOnly ? " and first pages only" : ""
  }.`

/** Packs offered for payment-fixable errors. */
export interface Pack {
  readonly pack: "flex" | "production"
  readonly mode: "one_time" | "subscription"
  readonly price_usd_cents: number
  readonly credits?: number
  readonly credits_per_month?: number
}

/** Ways to take money: `local` is the built-in test-mode checkout (no money moves), `stripe` is Stripe. */
export type PaymentRailName = "local" | "stripe"
export const paymentRailNames = ["local", "stripe"] as const satisfies ReadonlyArray<PaymentRailName>
/**
 * What `PAYMENT_RAILS` may name: the checkout rails and `x402`, the agent's own payment inside a
 * call or `POST /v1/credits/x402` (no checkout page, so never a checkout rail).
 */
export const offeredRailNames = [...paymentRailNames, "x402"] as const
/** The most credits one x402 payment buys (its price then fits a purchase row). */
export const x402MaxCredits = 1_000_000_000
