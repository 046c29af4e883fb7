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
  /** Keys an account may have working at once; creating another first needs a revocation. */
  readonly maxActiveKeysPerAccount: number
  /** The OAuth authorization server's limits (per-IP rules count an IPv6 client by its network). */
  readonly oauth: OAuthLimits
}

export interface OAuthLimits {
  /** Authorization requests (each can open a sign-in interaction) per IP per window. */
  readonly authorizationsPerIp: number
  readonly authorizationWindowMs: number
  /** Client ID Metadata Document fetches (cache misses) per IP per window. */
  readonly clientFetchesPerIp: number
  readonly clientFetchWindowMs: number
  /** One fetch of a client's document, connection to last byte, and its largest body. */
  readonly clientFetchTimeoutMs: number
  readonly clientDocumentMaxBytes: number
  /** How long a fetched document is reused (its Cache-Control `max-age`, kept within these). */
  readonly clientDocumentCacheMinSeconds: number
  readonly clientDocumentCacheMaxSeconds: number
  /** A dynamically registered client that no account connects within this time is forgotten. */
  readonly unusedClientMs: number
}

const hour = 3_600_000
const day = 24 * hour

export const defaultPolicy: Policy = {
  freeCreditsPerIpDay: 200,
  ratePerMinute: { trial: 30, flex: 120, production: 600 },
  trialSearchLimit: 10,
  claimGrantCredits: 10_000,
  mintPerIpHour: 5,
  replayWindowMs: day,
  tombstoneMs: 7 * day,
  cacheRecentMs: 6 * hour,
  cacheKeepMs: 7 * day,
  cacheMemoryBytes: 16 * 1024 * 1024,
  packs: [
    { pack: "flex", mode: "one_time", price_usd_cents: 2_000, credits: 10_000 },
    { pack: "production", mode: "subscription", price_usd_cents: 9_900, credits_per_month: 75_000 }
  ],
  maxActiveKeysPerAccount: 100,
  oauth: {
    authorizationsPerIp: 30,
    authorizationWindowMs: 15 * 60_000,
    clientFetchesPerIp: 10,
    clientFetchWindowMs: 15 * 60_000,
    clientFetchTimeoutMs: 2_500,
    clientDocumentMaxBytes: 5 * 1024,
    clientDocumentCacheMinSeconds: 300,
    clientDocumentCacheMaxSeconds: 24 * 3600,
    unusedClientMs: 7 * day
  }
}
