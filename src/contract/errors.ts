import { Data } from "effect"
import type { Plan } from "../domain/plans.ts"

/**
 * The 17 error codes of the contract. Every code needs an entry in `errorCatalog`
 * and a class in `ApiError`; the `satisfies` clauses below make a missing one a type error.
 */
export type ErrorCode =
  | "INVALID_INPUT"
  | "NOT_FOUND"
  | "UNAUTHORIZED"
  | "NOT_ENTITLED"
  | "INSUFFICIENT_CREDITS"
  | "QUOTE_EXCEEDS_MAX_CREDITS"
  | "IDEMPOTENCY_KEY_REQUIRED"
  | "IDEMPOTENCY_KEY_REUSED"
  | "CONCURRENCY_LIMIT"
  | "RATE_LIMITED"
  | "TRIAL_CAP_EXCEEDED"
  | "BUDGET_EXHAUSTED"
  | "UPSTREAM_UNAVAILABLE"
  | "PAYLOAD_TOO_LARGE"
  | "INTERNAL"
  | "AUTH_REQUIRED"
  | "KEY_REQUIRED"

export interface ErrorSpec {
  readonly status: 400 | 401 | 402 | 403 | 404 | 409 | 413 | 429 | 500 | 502 | 503
  readonly retriable: boolean
  readonly title: string
  /** What an agent should do next; shown on the error documentation page. */
  readonly next: string
  /** Carries `upgrade_url` and `offer`: always, on trial accounts only, or never. */
  readonly offer: "always" | "trial" | "never"
}

export const errorCatalog = {
  INVALID_INPUT: {
    status: 400,
    retriable: false,
    offer: "never",
    title: "Invalid input",
    next: "Fix the parameter named in `param` as the message says, then send the call again."
  },
  NOT_FOUND: {
    status: 404,
    retriable: false,
    offer: "never",
    title: "Not found",
    next: "Check the identifier or path. For an expired stored replay, resend with a fresh Idempotency-Key."
  },
  UNAUTHORIZED: {
    status: 401,
    retriable: false,
    offer: "never",
    title: "Unauthorized",
    next: "The key or link is not usable (bad format, unknown, revoked, suspended or expired). Mint a new key with POST /v1/keys/mint or recover the account."
  },
  NOT_ENTITLED: {
    status: 403,
    retriable: false,
    offer: "never",
    title: "Not entitled",
    next: "The account is not enabled for this platform. GET /v1/usage lists the platforms this key can call."
  },
  INSUFFICIENT_CREDITS: {
    status: 402,
    retriable: false,
    offer: "always",
    title: "Insufficient credits",
    next: "Buy a pack at `upgrade_url`, then retry the same call with the SAME Idempotency-Key."
  },
  QUOTE_EXCEEDS_MAX_CREDITS: {
    status: 402,
    retriable: false,
    offer: "never",
    title: "Quote exceeds max_credits",
    next: "Raise `max_credits` to at least the quote, or ask for less (fewer sections, a smaller limit)."
  },
  IDEMPOTENCY_KEY_REQUIRED: {
    status: 400,
    retriable: false,
    offer: "never",
    title: "Idempotency-Key required",
    next: "Send an `Idempotency-Key` header (8 to 128 characters, a UUID is best) on every metered call of a paid key."
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 409,
    retriable: false,
    offer: "never",
    title: "Idempotency-Key reused",
    next: "This Idempotency-Key was used with other arguments. Use a fresh key for a new logical call."
  },
  CONCURRENCY_LIMIT: {
    status: 429,
    retriable: true,
    offer: "trial",
    title: "Concurrency limit",
    next: "Another call on this account is in flight. Wait `retry_after_seconds` and retry."
  },
  RATE_LIMITED: {
    status: 429,
    retriable: true,
    offer: "trial",
    title: "Rate limited",
    next: "Too many calls for this plan in the current window. Wait `retry_after_seconds` and retry."
  },
  TRIAL_CAP_EXCEEDED: {
    status: 403,
    retriable: false,
    offer: "always",
    title: "Trial cap exceeded",
    next: "Free keys are cached-only, first-page-only, search limit 10, and share 200 credits per IP per UTC day. Wait for the UTC day to roll over, or buy a pack and retry with a fresh Idempotency-Key."
  },
  BUDGET_EXHAUSTED: {
    status: 503,
    retriable: false,
    offer: "always",
    title: "Free budget exhausted",
    next: "The shared free-tier budget is used up or closed. Buy a pack and retry with a fresh Idempotency-Key."
  },
  UPSTREAM_UNAVAILABLE: {
    status: 502,
    retriable: true,
    offer: "never",
    title: "Upstream unavailable",
    next: "The platform could not be reached and no cached copy was usable. Nothing was charged. Retry after `retry_after_seconds`."
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    retriable: false,
    offer: "never",
    title: "Payload too large",
    next: "The request or the response exceeded the size limit. Send a smaller body or ask for less."
  },
  INTERNAL: {
    status: 500,
    retriable: true,
    offer: "never",
    title: "Internal error",
    next: "Retry once. If it fails again, report the id in the message."
  },
  AUTH_REQUIRED: {
    status: 401,
    retriable: false,
    offer: "never",
    title: "Management token required",
    next: "This operation needs a management token (svcm_...), not a spend key. Sign in to get one."
  },
  KEY_REQUIRED: {
    status: 401,
    retriable: false,
    offer: "never",
    title: "Key required",
    next: "Send `Authorization: Bearer <key>`. Mint a free trial key with `curl -X POST {base_url}/v1/keys/mint`."
  }
} as const satisfies Record<ErrorCode, ErrorSpec>

/** Who the failing call belonged to, so payment-fixable errors can carry an account-bound offer. */
export interface ErrorAccount {
  readonly accountId: string
  readonly plan: Plan
}

interface Base {
  readonly message: string
  readonly account?: ErrorAccount | undefined
}

export class InvalidInput extends Data.TaggedError("InvalidInput")<
  Base & { readonly param?: string | undefined; readonly closest_matches?: ReadonlyArray<string> | undefined }
> {
  readonly code = "INVALID_INPUT"
}
export class NotFound extends Data.TaggedError("NotFound")<Base> {
  readonly code = "NOT_FOUND"
}
export class Unauthorized extends Data.TaggedError("Unauthorized")<Base> {
  readonly code = "UNAUTHORIZED"
}
export class NotEntitled extends Data.TaggedError("NotEntitled")<
  Base & { readonly platform: string; readonly entitled: ReadonlyArray<string> }
> {
  readonly code = "NOT_ENTITLED"
}
export class InsufficientCredits extends Data.TaggedError("InsufficientCredits")<
  Base & { readonly credits_required: number; readonly credits_available: number }
> {
  readonly code = "INSUFFICIENT_CREDITS"
}
export class QuoteExceedsMaxCredits extends Data.TaggedError("QuoteExceedsMaxCredits")<
  Base & { readonly quoted: number; readonly max_credits: number }
> {
  readonly code = "QUOTE_EXCEEDS_MAX_CREDITS"
}
export class IdempotencyKeyRequired extends Data.TaggedError("IdempotencyKeyRequired")<Base> {
  readonly code = "IDEMPOTENCY_KEY_REQUIRED"
}
export class IdempotencyKeyReused extends Data.TaggedError("IdempotencyKeyReused")<Base> {
  readonly code = "IDEMPOTENCY_KEY_REUSED"
}
export class ConcurrencyLimit extends Data.TaggedError("ConcurrencyLimit")<
  Base & { readonly retry_after_seconds: number }
> {
  readonly code = "CONCURRENCY_LIMIT"
}
export class RateLimited extends Data.TaggedError("RateLimited")<
  Base & { readonly retry_after_seconds: number }
> {
  readonly code = "RATE_LIMITED"
}
export class TrialCapExceeded extends Data.TaggedError("TrialCapExceeded")<
  Base & { readonly param?: string | undefined }
> {
  readonly code = "TRIAL_CAP_EXCEEDED"
}
export class BudgetExhausted extends Data.TaggedError("BudgetExhausted")<Base> {
  readonly code = "BUDGET_EXHAUSTED"
}
export class UpstreamUnavailable extends Data.TaggedError("UpstreamUnavailable")<
  Base & { readonly retry_after_seconds: number }
> {
  readonly code = "UPSTREAM_UNAVAILABLE"
}
export class PayloadTooLarge extends Data.TaggedError("PayloadTooLarge")<Base> {
  readonly code = "PAYLOAD_TOO_LARGE"
}
export class Internal extends Data.TaggedError("Internal")<
  Base & { readonly receipt_id?: string | undefined; readonly retry_after_seconds?: number | undefined }
> {
  readonly code = "INTERNAL"
}
export class AuthRequired extends Data.TaggedError("AuthRequired")<
  Base & { readonly account_ids?: ReadonlyArray<string> | undefined }
> {
  readonly code = "AUTH_REQUIRED"
}
export class KeyRequired extends Data.TaggedError("KeyRequired")<Base> {
  readonly code = "KEY_REQUIRED"
}

export type ApiError =
  | InvalidInput
  | NotFound
  | Unauthorized
  | NotEntitled
  | InsufficientCredits
  | QuoteExceedsMaxCredits
  | IdempotencyKeyRequired
  | IdempotencyKeyReused
  | ConcurrencyLimit
  | RateLimited
  | TrialCapExceeded
  | BudgetExhausted
  | UpstreamUnavailable
  | PayloadTooLarge
  | Internal
  | AuthRequired
  | KeyRequired

/** Fails the typecheck when a code has no class in `ApiError`. */
type Unmapped = Exclude<ErrorCode, ApiError["code"]>
export const everyCodeHasAClass: [Unmapped] extends [never] ? true : Unmapped = true

const apiErrorTags = new Set<string>([
  "InvalidInput",
  "NotFound",
  "Unauthorized",
  "NotEntitled",
  "InsufficientCredits",
  "QuoteExceedsMaxCredits",
  "IdempotencyKeyRequired",
  "IdempotencyKeyReused",
  "ConcurrencyLimit",
  "RateLimited",
  "TrialCapExceeded",
  "BudgetExhausted",
  "UpstreamUnavailable",
  "PayloadTooLarge",
  "Internal",
  "AuthRequired",
  "KeyRequired"
] satisfies ReadonlyArray<ApiError["_tag"]>)

export const isApiError = (u: unknown): u is ApiError =>
  typeof u === "object" && u !== null && "_tag" in u && apiErrorTags.has((u as { _tag: string })._tag)
