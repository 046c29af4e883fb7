/**
 * Every price rule of the contract: what each data operation costs in credits.
 * A quote is what is reserved; settlement may refund parts of it, never charge more.
 */
export interface Quote {
  readonly credits: number
  readonly lines: ReadonlyArray<{ readonly item: string; readonly credits: number }>
}

export const refundReasons = ["realtime_fallback", "domain_resolved_before", "fewer_results"] as const
export type RefundReason = (typeof refundReasons)[number]
export interface Refund {
  readonly reason: RefundReason
  readonly credits: number
}

/**
 * What a call is charged when it settles: its quote less its refunds, never below zero, and the
 * refunds that count (those of a credit or more). The one rule for the cache-hit path and settle.
 */
export const settlement = (
  quoted: number,
  refunds: ReadonlyArray<Refund>
): { readonly charged: number; readonly refunds: ReadonlyArray<Refund> } => {
  const kept = refunds.filter((refund) => refund.credits > 0)
  const refunded = Math.min(
    quoted,
    kept.reduce((sum, refund) => sum + refund.credits, 0)
  )
  return { charged: quoted - refunded, refunds: kept }
}

const quote = (...lines: ReadonlyArray<readonly [string, number]>): Quote => {
  const kept = lines.filter(([, credits]) => credits > 0).map(([item, credits]) => ({ item, credits }))
  return { credits: kept.reduce((sum, line) => sum + line.credits, 0), lines: kept }
}

export const realtimeSurcharge = 2
export const domainSurcharge = 4

export const withFreshness = (base: Quote, freshness: "recent" | "realtime"): Quote =>
  freshness === "realtime"
    ? quote(...base.lines.map((l) => [l.item, l.credits] as const), ["realtime", realtimeSurcharge])
    : base

export const prices = {
  resolveUrl: () => quote(["resolveUrl", 2]),
  getProfile: (sections: number) =>
    quote(["profile", 4], ["sections beyond 2", Math.max(0, sections - 2) * 2]),
  /** 10 including the first 10 results; each further 10 (or part of 10) adds 1. */
  searchPeople: (limit: number) =>
    quote(["search", 10], ["results beyond 10", Math.ceil(Math.max(0, limit - 10) / 10)]),
  getCompany: (isDomain: boolean) =>
    quote(["company", 4], ["domain resolution", isDomain ? domainSurcharge : 0]),
  getPosts: (isDomain: boolean) =>
    quote(["posts page", 4], ["domain resolution", isDomain ? domainSurcharge : 0]),
  forumSearch: () => quote(["forum search page", 6]),
  getCommunity: (includeSettings: boolean) => quote(["community", 4], ["settings", includeSettings ? 2 : 0]),
  getCommunityPosts: () => quote(["community posts page", 4]),
  getForumUser: (sections: number) => quote(["forum user", 4], ["sections", sections * 2]),
  /** 4 for up to 10 ids, +1 per further 10 (or part); a full thread adds 4. */
  getForumPosts: (ids: number, thread: boolean) =>
    quote(
      ["forum posts", 4],
      ["ids beyond 10", Math.ceil(Math.max(0, ids - 10) / 10)],
      ["thread", thread ? 4 : 0]
    ),
  resolveForumUrl: () => quote(["resolveForumUrl", 2]),
  microblogSearch: () => quote(["microblog search page", 6]),
  getMicroblogProfile: () => quote(["microblog profile", 4]),
  getTweets: () => quote(["tweets page", 4]),
  getTweet: () => quote(["tweet", 4]),
  getTweetReplies: () => quote(["tweet replies page", 4]),
  resolveMicroblogUrl: () => quote(["resolveMicroblogUrl", 2])
} as const

/** Search settles by the results returned: the price of the page actually delivered, never above the quote. */
export const searchFewerResultsRefund = (quotedLimit: number, returned: number): number =>
  prices.searchPeople(quotedLimit).credits - prices.searchPeople(Math.max(10, returned)).credits
