import type { ErrorAccount, ErrorCode, ErrorOf } from "../errors.ts"
import {
  AuthRequired,
  BudgetExhausted,
  ConcurrencyLimit,
  IdempotencyKeyRequired,
  IdempotencyKeyReused,
  InsufficientCredits,
  Internal,
  InvalidInput,
  KeyRequired,
  NotEntitled,
  NotFound,
  PayloadTooLarge,
  QuoteExceedsMaxCredits,
  RateLimited,
  TrialCapExceeded,
  Unauthorized,
  UpstreamUnavailable
} from "../errors.ts"
import { idempotencyKeyLengthText } from "../idempotencyKey.ts"

/**
 * One error of each code, as the service raises it (the messages are the service's own, with
 * plausible numbers), on the account of the example trial key: the published document renders
 * them with `toProblem` for its own base URL, upgrade URL and packs.
 */
export const problemExamples = (
  accountId: string,
  baseUrl: string
): { readonly [C in ErrorCode]: ErrorOf<C> } => {
  const trial: ErrorAccount = { accountId, plan: "trial" }
  const flex: ErrorAccount = { accountId, plan: "flex" }
  return {
    INVALID_INPUT: new InvalidInput({
      message: "`sections` has an unknown value `skill`; expected about, experience, education or skills.",
      param: "sections",
      closest_matches: ["skills"]
    }),
    NOT_FOUND: new NotFound({
      message: "No profile matches `richard-lewis-00000000`. Check the slug, URL or URN.",
      param: "identifier"
    }),
    UNAUTHORIZED: new Unauthorized({
      message: "This key is not usable (bad format, unknown, revoked, or its account suspended).",
      param: "authorization"
    }),
    NOT_ENTITLED: new NotEntitled({
      message:
        "This account is not enabled for microblog. GET /v1/usage lists the platforms this key can call.",
      platform: "microblog",
      entitled: ["profnet", "forum"],
      account: flex
    }),
    INSUFFICIENT_CREDITS: new InsufficientCredits({
      message:
        "This call is quoted 10 credits and the account can cover 4. Buy a pack at upgrade_url, then retry with the SAME Idempotency-Key.",
      credits_required: 10,
      credits_available: 4,
      account: flex
    }),
    QUOTE_EXCEEDS_MAX_CREDITS: new QuoteExceedsMaxCredits({
      message:
        "This call is quoted 8 credits (profile 4, sections 4), above max_credits=5. Raise max_credits or ask for less.",
      quoted: 8,
      max_credits: 5,
      account: flex
    }),
    IDEMPOTENCY_KEY_REQUIRED: new IdempotencyKeyRequired({
      message: `Paid keys must send an Idempotency-Key header (${idempotencyKeyLengthText}, a UUID is best) on metered calls.`,
      account: flex
    }),
    IDEMPOTENCY_KEY_REUSED: new IdempotencyKeyReused({
      message: "This Idempotency-Key was already used with other arguments. Use a fresh key for a new call.",
      account: flex
    }),
    CONCURRENCY_LIMIT: new ConcurrencyLimit({
      message:
        "Another call on this account is in flight; one call at a time per account. Retry after retry_after_seconds.",
      retry_after_seconds: 2,
      account: trial
    }),
    RATE_LIMITED: new RateLimited({
      message: "At most 30 calls per minute on the trial plan. Retry after retry_after_seconds.",
      retry_after_seconds: 12,
      account: trial
    }),
    TRIAL_CAP_EXCEEDED: new TrialCapExceeded({
      message:
        "Trial keys cannot ask for realtime data: use freshness=recent (a recent cached copy, or a live fetch when there is none), or buy a pack.",
      param: "freshness",
      account: trial
    }),
    BUDGET_EXHAUSTED: new BudgetExhausted({
      message:
        "The shared free-tier budget is used up or closed for today. Buy a pack to keep calling; cached data still serves paid keys.",
      account: trial
    }),
    UPSTREAM_UNAVAILABLE: new UpstreamUnavailable({
      message:
        "The platform could not be reached and no usable cached copy exists. Nothing was charged; retry after retry_after_seconds.",
      retry_after_seconds: 30
    }),
    PAYLOAD_TOO_LARGE: new PayloadTooLarge({
      message:
        "The response would be 5242880 bytes, above the 4194304-byte limit. Ask for less (fewer ids, sections or comments); nothing was charged."
    }),
    INTERNAL: new Internal({
      message:
        "The service failed while handling this call (trace 4bf92f3577b34da6a3ce929d0e0e4736). Retry once; if it fails again, report this id."
    }),
    AUTH_REQUIRED: new AuthRequired({
      message: `A spend key cannot manage an account. Sign in with your email to get a management token (svcm_...): POST /v1/auth/email/start, or ${baseUrl}/login in a browser.`,
      account_ids: [accountId]
    }),
    KEY_REQUIRED: new KeyRequired({
      message:
        "No key was sent. Mint a free trial key with POST /v1/keys/mint (no body, no auth) and send it as `Authorization: Bearer <key>`."
    })
  }
}
