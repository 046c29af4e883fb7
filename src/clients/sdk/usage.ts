import { Data } from "effect"
import { InsufficientCredits } from "../../contract/errors.ts"
import type { Offer } from "../../contract/offer.ts"

/**
 * What a metered answer's usage headers say (the same numbers, and names, as an MCP result's
 * `_meta["svc/usage"]`): the plan's rate limit and what is left of it, and once charged the
 * credits charged, the spendable credits left and what a capped key's cap has left.
 */
export interface Usage {
  /** `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers); absent when not sent. */
  readonly rate_limit?: {
    readonly policy: string
    readonly limit: number
    readonly window_seconds: number
    readonly remaining: number
    readonly reset_seconds: number
  }
  /** `Credits-Charged`. */
  readonly credits_charged?: number
  /** `Credits-Remaining`: free budget left today plus grant plus balance. */
  readonly credits_remaining?: number
  /** `Key-Cap-Remaining`: what the key's spend cap has left in its period (capped keys only). */
  readonly key_cap_remaining?: number
}

/** A data call's answer with the usage its headers reported. */
export type WithUsage<A> = A & { readonly usage: Usage }

const item = (text: string | undefined) => {
  // `"plan";q=60;w=60`: a quoted name, then parameters.
  const match = text === undefined ? null : /^"([^"]*)"((?:;[a-z]+=\d+)*)$/.exec(text.trim())
  if (match === null) return undefined
  const parameters = Object.fromEntries(
    match[2]!
      .split(";")
      .filter((part) => part !== "")
      .map((part) => {
        const [name, value] = part.split("=")
        return [name!, Number(value)]
      })
  )
  return { name: match[1]!, parameters }
}

const integer = (text: string | undefined) =>
  text !== undefined && /^\d+$/.test(text.trim()) ? Number(text) : undefined

/** The usage numbers of a response's headers (lower-case names, as `HttpClientResponse` keeps them). */
export const usageOf = (headers: Readonly<Record<string, string | undefined>>): Usage => {
  const policy = item(headers["ratelimit-policy"])
  const state = item(headers.ratelimit)
  const charged = integer(headers["credits-charged"])
  const remaining = integer(headers["credits-remaining"])
  const keyCap = integer(headers["key-cap-remaining"])
  const limit = policy?.parameters.q
  const window = policy?.parameters.w
  const left = state?.parameters.r
  const reset = state?.parameters.t
  return {
    ...(policy !== undefined &&
    limit !== undefined &&
    window !== undefined &&
    left !== undefined &&
    reset !== undefined
      ? {
          rate_limit: {
            policy: policy.name,
            limit,
            window_seconds: window,
            remaining: left,
            reset_seconds: reset
          }
        }
      : {}),
    ...(charged === undefined ? {} : { credits_charged: charged }),
    ...(remaining === undefined ? {} : { credits_remaining: remaining }),
    ...(keyCap === undefined ? {} : { key_cap_remaining: keyCap })
  }
}

/**
 * INSUFFICIENT_CREDITS with `limit: "key_cap"`: the key's own spend cap (or its parent's), not the
 * account, cannot cover the quote. Buying credits does not help; raising the cap (`updateKey`) or
 * waiting for `cap_resets_at` does, then the same call resumes with the same Idempotency-Key.
 */
export class KeyCapReached extends Data.TaggedError("KeyCapReached")<{
  readonly message: string
  readonly credits_required: number
  /** What the cap has left in its period. */
  readonly credits_available: number
  /** When a day or month cap starts afresh; absent for a `total` cap. */
  readonly cap_resets_at?: string | undefined
  readonly doc_url?: string | undefined
  readonly offer?: Offer | undefined
}> {
  readonly code = "INSUFFICIENT_CREDITS"
  readonly limit = "key_cap"
}

/** The SDK's error for a refused call: a key cap's INSUFFICIENT_CREDITS becomes `KeyCapReached`. */
export const distinguishKeyCap = (error: unknown): unknown =>
  error instanceof InsufficientCredits && error.limit === "key_cap"
    ? new KeyCapReached({
        message: error.message,
        credits_required: error.credits_required,
        credits_available: error.credits_available,
        ...(error.cap_resets_at === undefined ? {} : { cap_resets_at: error.cap_resets_at }),
        ...(error.doc_url === undefined ? {} : { doc_url: error.doc_url }),
        ...(error.offer === undefined ? {} : { offer: error.offer })
      })
    : error
