import { Schema } from "effect"
import { plans } from "../domain/plans.ts"
import { idempotencyKeyLengthText } from "./idempotencyKey.ts"
import { Offer, X402PaymentRequired } from "./offer.ts"

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
    next: "The key is not usable (bad format, unknown, revoked, or its account suspended). Mint a new key with `POST /v1/keys/mint`."
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
    next: `Send an \`Idempotency-Key\` header (${idempotencyKeyLengthText}, a UUID is best) on every metered call of a paid key.`
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
    next: "A cap of the free tier refused this call (`GET /v1/usage` shows the tier and what is left today). Wait for the UTC day to roll over, or buy a pack and retry with a fresh Idempotency-Key."
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
    title: "Management token, or the account it acts on, required",
    next: "Account management (keys, alert, billing portal, sign-in tokens) takes a management token (`svcm_...`), not a spend key: sign in with `POST {base_url}/v1/auth/email/start` and `/v1/auth/email/verify`, or at {base_url}/login. When the sign-in governs several accounts, send `account_id`, one of `account_ids`."
  },
  KEY_REQUIRED: {
    status: 401,
    retriable: false,
    offer: "never",
    title: "Key required",
    next: "Send `Authorization: Bearer <key>`. Mint a free trial key with `curl -X POST {base_url}/v1/keys/mint`."
  }
} as const satisfies Record<ErrorCode, ErrorSpec>

/**
 * `Schema.TaggedError`, less the stack trace: an `ApiError` is an answer to the caller, never read
 * for where it was made, and capturing a stack is most of what constructing one costs (Effect's own
 * `SchemaError` is made the same way).
 */
const ApiErrorClass = <Self>() => {
  const make = Schema.TaggedError<Self>()
  return ((tag: string, fields: Schema.Struct.Fields) => {
    const Class = make(tag, fields) as unknown as new (...args: ReadonlyArray<unknown>) => object
    return class extends Class {
      constructor(...args: ReadonlyArray<unknown>) {
        const limit = Error.stackTraceLimit
        Error.stackTraceLimit = 0
        try {
          super(...args)
        } finally {
          Error.stackTraceLimit = limit
        }
      }
    }
  }) as unknown as typeof make
}

/** Who the failing call belonged to, so payment-fixable errors can carry an account-bound offer. */
export const ErrorAccount = Schema.Struct({ accountId: Schema.String, plan: Schema.Literals(plans) })
export type ErrorAccount = typeof ErrorAccount.Type

/**
 * What every error carries. `account` stays on the server (it binds the offer to the account);
 * `doc_url`, `upgrade_url`, `offer` and `mint` are rendered from the configuration, so they are
 * set only on an error a client decoded from a problem document.
 */
const base = {
  message: Schema.String,
  account: Schema.optional(ErrorAccount),
  doc_url: Schema.optional(Schema.String),
  upgrade_url: Schema.optional(Schema.String),
  offer: Schema.optional(Offer)
}
const retryAfter = { retry_after_seconds: Schema.Int }

export class InvalidInput extends ApiErrorClass<InvalidInput>()("InvalidInput", {
  ...base,
  param: Schema.optional(Schema.String),
  closest_matches: Schema.optional(Schema.Array(Schema.String))
}) {
  readonly code = "INVALID_INPUT"
}
export class NotFound extends ApiErrorClass<NotFound>()("NotFound", {
  ...base,
  param: Schema.optional(Schema.String)
}) {
  readonly code = "NOT_FOUND"
}
export class Unauthorized extends ApiErrorClass<Unauthorized>()("Unauthorized", {
  ...base,
  param: Schema.optional(Schema.String)
}) {
  readonly code = "UNAUTHORIZED"
}
/**
 * A platform the key or account is not enabled for (`platform`, `entitled`), or a capability the key
 * was not granted (child keys without `may_delegate`: neither field).
 */
export class NotEntitled extends ApiErrorClass<NotEntitled>()("NotEntitled", {
  ...base,
  platform: Schema.optional(Schema.String),
  entitled: Schema.optional(Schema.Array(Schema.String))
}) {
  readonly code = "NOT_ENTITLED"
}
export class InsufficientCredits extends ApiErrorClass<InsufficientCredits>()("InsufficientCredits", {
  ...base,
  credits_required: Schema.Int,
  credits_available: Schema.Int,
  /** `key_cap`: the key's spend cap (or its parent's), not the account, cannot cover the quote. */
  limit: Schema.optional(Schema.Literal("key_cap")),
  /** When a day or month cap starts afresh. */
  cap_resets_at: Schema.optional(Schema.String),
  /** Why an x402 payment sent with the call was refused (the facilitator's reason); nothing was credited. */
  reason: Schema.optional(Schema.String),
  /** The x402 payment that buys what is missing, where the rail is offered (`offer.x402`, `PAYMENT-REQUIRED`). */
  x402: Schema.optional(X402PaymentRequired)
}) {
  readonly code = "INSUFFICIENT_CREDITS"
}
export class QuoteExceedsMaxCredits extends ApiErrorClass<QuoteExceedsMaxCredits>()(
  "QuoteExceedsMaxCredits",
  {
    ...base,
    quoted: Schema.Int,
    max_credits: Schema.Int
  }
) {
  readonly code = "QUOTE_EXCEEDS_MAX_CREDITS"
}
export class IdempotencyKeyRequired extends ApiErrorClass<IdempotencyKeyRequired>()(
  "IdempotencyKeyRequired",
  base
) {
  readonly code = "IDEMPOTENCY_KEY_REQUIRED"
}
export class IdempotencyKeyReused extends ApiErrorClass<IdempotencyKeyReused>()(
  "IdempotencyKeyReused",
  base
) {
  readonly code = "IDEMPOTENCY_KEY_REUSED"
}
export class ConcurrencyLimit extends ApiErrorClass<ConcurrencyLimit>()("ConcurrencyLimit", {
  ...base,
  ...retryAfter
}) {
  readonly code = "CONCURRENCY_LIMIT"
}
export class RateLimited extends ApiErrorClass<RateLimited>()("RateLimited", {
  ...base,
  ...retryAfter
}) {
  readonly code = "RATE_LIMITED"
}
export class TrialCapExceeded extends ApiErrorClass<TrialCapExceeded>()("TrialCapExceeded", {
  ...base,
  param: Schema.optional(Schema.String),
  /** An unclaimed trial account's free budget is spent: claiming it (sign-in with this key) grants credits. */
  claim_url: Schema.optional(Schema.String)
}) {
  readonly code = "TRIAL_CAP_EXCEEDED"
}
export class BudgetExhausted extends ApiErrorClass<BudgetExhausted>()("BudgetExhausted", base) {
  readonly code = "BUDGET_EXHAUSTED"
}
export class UpstreamUnavailable extends ApiErrorClass<UpstreamUnavailable>()("UpstreamUnavailable", {
  ...base,
  ...retryAfter
}) {
  readonly code = "UPSTREAM_UNAVAILABLE"
}
export class PayloadTooLarge extends ApiErrorClass<PayloadTooLarge>()("PayloadTooLarge", base) {
  readonly code = "PAYLOAD_TOO_LARGE"
}
export class Internal extends ApiErrorClass<Internal>()("Internal", {
  ...base,
  receipt_id: Schema.optional(Schema.String),
  retry_after_seconds: Schema.optional(Schema.Int)
}) {
  readonly code = "INTERNAL"
}
export class AuthRequired extends ApiErrorClass<AuthRequired>()("AuthRequired", {
  ...base,
  account_ids: Schema.optional(Schema.Array(Schema.String))
}) {
  readonly code = "AUTH_REQUIRED"
}
export class KeyRequired extends ApiErrorClass<KeyRequired>()("KeyRequired", {
  ...base,
  mint: Schema.optional(Schema.Struct({ method: Schema.String, url: Schema.String, curl: Schema.String }))
}) {
  readonly code = "KEY_REQUIRED"
}

/** Every error class by its code: the closed set the wire schemas, OpenAPI and typed clients derive from. */
export const errorClasses = {
  INVALID_INPUT: InvalidInput,
  NOT_FOUND: NotFound,
  UNAUTHORIZED: Unauthorized,
  NOT_ENTITLED: NotEntitled,
  INSUFFICIENT_CREDITS: InsufficientCredits,
  QUOTE_EXCEEDS_MAX_CREDITS: QuoteExceedsMaxCredits,
  IDEMPOTENCY_KEY_REQUIRED: IdempotencyKeyRequired,
  IDEMPOTENCY_KEY_REUSED: IdempotencyKeyReused,
  CONCURRENCY_LIMIT: ConcurrencyLimit,
  RATE_LIMITED: RateLimited,
  TRIAL_CAP_EXCEEDED: TrialCapExceeded,
  BUDGET_EXHAUSTED: BudgetExhausted,
  UPSTREAM_UNAVAILABLE: UpstreamUnavailable,
  PAYLOAD_TOO_LARGE: PayloadTooLarge,
  INTERNAL: Internal,
  AUTH_REQUIRED: AuthRequired,
  KEY_REQUIRED: KeyRequired
} as const satisfies Record<ErrorCode, Schema.Top>

export type ErrorClasses = typeof errorClasses
/** The error of one code. */
export type ErrorOf<C extends ErrorCode> = InstanceType<ErrorClasses[C]>

export type ApiError = ErrorOf<ErrorCode>

/** Each class's `code` is the code it is filed under (a class filed under another code fails here). */
type Misfiled = { [C in ErrorCode]: ErrorOf<C>["code"] extends C ? never : C }[ErrorCode]
export const everyClassUnderItsCode: [Misfiled] extends [never] ? true : Misfiled = true

const apiErrorTags = new Set<string>(Object.values(errorClasses).map((errorClass) => errorClass.identifier))

export const isApiError = (u: unknown): u is ApiError =>
  typeof u === "object" && u !== null && "_tag" in u && apiErrorTags.has((u as { _tag: string })._tag)
