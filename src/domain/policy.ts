import type { Pack, Plan } from "./plans.ts"

/**
 * The numbers of the product: budgets, plan limits, caps, ages and packs. Each is a
 * default an operator can change through configuration (`AppConfig.policy`, read from the
 * environment); nothing else in the code repeats them.
 */
export interface Policy {
  /** The free budget every trial key of one IP shares, per UTC day. */
  readonly freeCreditsPerIpDay: number
  /** Calls per plan in each `planRateWindowMs`. */
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
  /** Email sign-in: who may start one, and how many wrong codes a code and a client may try. */
  readonly signIn: SignInLimits
  /** Recovery by email: who may ask for links. */
  readonly recovery: StartLimits
  /** Keys an account may have working at once; creating another first needs a revocation. */
  readonly maxActiveKeysPerAccount: number
  /** Child keys one key may have working at once. */
  readonly maxChildKeysPerKey: number
  /**
   * Child keys one account may have working at once: their own pool, apart from the owner's
   * `maxActiveKeysPerAccount` places (which count the account's own keys only).
   */
  readonly maxChildKeysPerAccount: number
  /** Child keys made or revoked (the two counted together) per parent key, and per account. */
  readonly childKeyChangesPerKey: LimitRule
  readonly childKeyChangesPerAccount: LimitRule
  /** Receipt exports (`GET /v1/receipts/export`) one account may start per window. */
  readonly exportsPerAccount: LimitRule
  /** Audit log pages (`GET /v1/audit`, `list_audit_events`, the dashboard's Activity) one account may read per window. */
  readonly auditReadsPerAccount: LimitRule
  /** Wrong operator credentials (admin token, metrics token) one client IP may send per window, each. */
  readonly operatorAuthFailuresPerIp: LimitRule
  /** The OAuth authorization server's limits (per-IP rules count an IPv6 client by its network). */
  readonly oauth: OAuthLimits
  /** Webhook endpoints and their deliveries. */
  readonly webhooks: WebhookLimits
  /** Automatic top-up. */
  readonly topup: TopupLimits
  /** `GET /v1/receipts/export`: the longest range, and the receipts read per page of the stream. */
  readonly exportMaxDays: number
  readonly exportPageRows: number
}

export interface WebhookLimits {
  /** Endpoints an account may have (deleted ones do not count). */
  readonly maxEndpointsPerAccount: number
  /** One delivery attempt, connection to last byte read: a slow or silent receiver costs this. */
  readonly timeoutMs: number
  /** The TCP connection of one attempt, at most (within `timeoutMs`): a silent address costs this. */
  readonly connectTimeoutMs: number
  /** The wait after a failed attempt starts here and doubles up to `retryMaxMs`, for `retryForMs`. */
  readonly retryFirstMs: number
  readonly retryMaxMs: number
  readonly retryForMs: number
  /** An endpoint whose attempts all failed for this long is disabled and its owner emailed. */
  readonly disableAfterMs: number
  /** The receiver's answer read and recorded, at most. */
  readonly responseMaxBytes: number
  /** Endpoints one instance delivers to at once (each endpoint gets one request at a time). */
  readonly concurrency: number
  /**
   * Endpoints of one account delivered to at once, across every instance (fairness: an account's
   * slow receivers hold at most this many workers; the others serve other accounts).
   */
  readonly perAccount: number
  /**
   * Deliveries waiting for one endpoint, at most: past it a new event is not queued for that
   * endpoint (the newest are dropped, the oldest kept); a test ping is always queued.
   */
  readonly maxPendingPerEndpoint: number
  /** Finished deliveries, their events and attempts are deleted this long after. */
  readonly keepMs: number
  /** Test pings an account may queue per window (each makes the service send a request). */
  readonly tests: LimitRule
  /** Test pings one endpoint may be sent per window, within the account's. */
  readonly testsPerEndpoint: LimitRule
}

export interface TopupLimits {
  /** Failed top-ups in a row that disarm automatic top-up (its owner is emailed). */
  readonly failuresToDisarm: number
  /** After a failed top-up, the next one waits this long. */
  readonly retryAfterFailureMs: number
  /** Tries of one top-up whose payment provider did not answer, before it counts as failed. */
  readonly chargeAttempts: number
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

/** At most `limit` events per `windowMs` (a fixed window). */
export interface LimitRule {
  readonly limit: number
  readonly windowMs: number
}

/**
 * Who may ask for mail to an address (a sign-in code or recovery links). A client is an IP (an
 * IPv6 /64). A start from one client never kills another client's live code, so the only start a
 * stranger can spend for the owner is the per-email ceiling, whose short window bounds both the
 * owner's wait and the mail one address can be sent.
 */
export interface StartLimits {
  /** Starts from one client, for any emails. */
  readonly perIp: LimitRule
  /** Starts for one email from one client. */
  readonly perEmailIp: LimitRule
  /** Starts for one email from all clients together: the mail-bombing ceiling. */
  readonly perEmail: LimitRule
}

/**
 * Sign-in codes (6 digits, so a guess is right once in a million). Wrong tries are counted per
 * code and client: one client's wrong tries stop its own tries at that code, and the tries of
 * clients other than the one that started the code have a total, after which only the starting
 * client may still use it. The emailed link counts no tries: it cannot be guessed.
 */
export interface SignInLimits extends StartLimits {
  /** Wrong codes from one client, across all emails. */
  readonly wrongCodesPerIp: LimitRule
  /** Wrong tries of one client at one code. */
  readonly wrongTriesPerCodeIp: number
  /** Wrong tries at one code from all clients but the one that started it. */
  readonly wrongTriesPerCodeOthers: number
}

/** The window of a plan's rate limit (`ratePerMinute`): the one home of its length. */
export const planRateWindowMs = 60_000

/** A window in words: "15 minutes", "1 hour". */
export const windowWords = (ms: number) =>
  ms % 3_600_000 === 0
    ? `${ms / 3_600_000} hour${ms === 3_600_000 ? "" : "s"}`
    : `${Math.ceil(ms / 60_000)} minute${ms === 60_000 ? "" : "s"}`

const minute = 60_000
const hour = 60 * minute
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
  ],
  // At most 5 + 10 wrong tries per code: a stranger guesses one right with probability 1.5e-5.
  signIn: {
    perIp: { limit: 5, windowMs: 15 * minute },
    perEmailIp: { limit: 3, windowMs: hour },
    perEmail: { limit: 3, windowMs: 10 * minute },
    wrongCodesPerIp: { limit: 20, windowMs: 15 * minute },
    wrongTriesPerCodeIp: 5,
    wrongTriesPerCodeOthers: 10
  },
  recovery: {
    perIp: { limit: 5, windowMs: 15 * minute },
    perEmailIp: { limit: 3, windowMs: hour },
    perEmail: { limit: 3, windowMs: 10 * minute }
  },
  maxActiveKeysPerAccount: 100,
  maxChildKeysPerKey: 100,
  maxChildKeysPerAccount: 1_000,
  childKeyChangesPerKey: { limit: 30, windowMs: minute },
  childKeyChangesPerAccount: { limit: 60, windowMs: minute },
  exportsPerAccount: { limit: 10, windowMs: minute },
  auditReadsPerAccount: { limit: 120, windowMs: minute },
  operatorAuthFailuresPerIp: { limit: 10, windowMs: 15 * minute },
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
  },
  webhooks: {
    maxEndpointsPerAccount: 10,
    timeoutMs: 10_000,
    connectTimeoutMs: 3_000,
    retryFirstMs: 5_000,
    retryMaxMs: hour,
    retryForMs: day,
    disableAfterMs: 3 * day,
    responseMaxBytes: 1024,
    concurrency: 4,
    perAccount: 2,
    maxPendingPerEndpoint: 1_000,
    keepMs: 30 * day,
    tests: { limit: 30, windowMs: hour },
    testsPerEndpoint: { limit: 5, windowMs: minute }
  },
  topup: {
    failuresToDisarm: 3,
    retryAfterFailureMs: 10 * minute,
    chargeAttempts: 5
  },
  exportMaxDays: 366,
  exportPageRows: 1000
}
