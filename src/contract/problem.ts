import { Option, Schema } from "effect"
import { links } from "../config.ts"
import { isPaid, type Pack } from "../domain/plans.ts"
import { type ApiError, type ErrorCode, errorCatalog } from "./errors.ts"
import { Offer } from "./offer.ts"

export { Offer }

/** RFC 9457 problem body with the contract's extension members. */
export const ProblemBody = Schema.Struct({
  type: Schema.String,
  title: Schema.String,
  status: Schema.Int,
  detail: Schema.String,
  code: Schema.String,
  message: Schema.String,
  is_retriable: Schema.Boolean,
  doc_url: Schema.String,
  param: Schema.optionalKey(Schema.String),
  closest_matches: Schema.optionalKey(Schema.Array(Schema.String)),
  retry_after_seconds: Schema.optionalKey(Schema.Int),
  credits_required: Schema.optionalKey(Schema.Int),
  credits_available: Schema.optionalKey(Schema.Int),
  limit: Schema.optionalKey(Schema.Literal("key_cap")),
  cap_resets_at: Schema.optionalKey(Schema.String),
  reason: Schema.optionalKey(
    Schema.String.annotate({
      description: "Why an x402 payment sent with the call was refused (nothing was credited or charged)."
    })
  ),
  quoted: Schema.optionalKey(Schema.Int),
  max_credits: Schema.optionalKey(Schema.Int),
  platform: Schema.optionalKey(Schema.String),
  entitled: Schema.optionalKey(Schema.Array(Schema.String)),
  upgrade_url: Schema.optionalKey(Schema.String),
  claim_url: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "On TRIAL_CAP_EXCEEDED for an unclaimed trial account: where its owner claims it (sign-in with the key), which grants free credits before any purchase."
    })
  ),
  offer: Schema.optionalKey(Offer),
  receipt_id: Schema.optionalKey(Schema.String),
  account_ids: Schema.optionalKey(Schema.Array(Schema.String)),
  mint: Schema.optionalKey(Schema.Struct({ method: Schema.String, url: Schema.String, curl: Schema.String }))
}).annotate({ identifier: "Problem" })
export type ProblemBody = typeof ProblemBody.Type

/** What a problem document needs from the configuration: its links, the packs and rails offers list. */
export interface ProblemContext {
  readonly baseUrl: string
  readonly upgradeUrl: string
  readonly rails: ReadonlyArray<string>
  readonly packs: ReadonlyArray<Pack>
  readonly refundPolicy: string
}

export const problemContext = (config: {
  readonly baseUrl: string
  readonly upgradeUrl: string
  readonly checkoutRails: ReadonlyArray<string>
  /** Present when the x402 rail is offered: offers name it after the checkout rails. */
  readonly x402?: Option.Option<unknown>
  readonly refundPolicy: string
  readonly policy: { readonly packs: ReadonlyArray<Pack> }
}): ProblemContext => ({
  baseUrl: config.baseUrl,
  upgradeUrl: config.upgradeUrl,
  rails:
    config.x402 !== undefined && Option.isSome(config.x402)
      ? [...config.checkoutRails, "x402"]
      : config.checkoutRails,
  packs: config.policy.packs,
  refundPolicy: config.refundPolicy
})

const resumeFor = (code: ErrorCode, keyCap = false): Offer["resume"] => {
  switch (code) {
    case "INSUFFICIENT_CREDITS":
      if (keyCap)
        return {
          action: "retry_same_idempotency_key",
          detail:
            "The key's spend cap is reached, not the account's credits, so buying credits does not lift it: once whoever the message names raises the cap, or a day or month cap resets (cap_resets_at), retry the same call with the same Idempotency-Key."
        }
      return {
        action: "retry_same_idempotency_key",
        detail: "After payment, retry the same call with the same Idempotency-Key."
      }
    case "TRIAL_CAP_EXCEEDED":
    case "BUDGET_EXHAUSTED":
      return {
        action: "retry_fresh_idempotency_key",
        detail: "After payment, retry with a fresh Idempotency-Key."
      }
    default:
      return {
        action: "wait_and_retry",
        detail: "This limit clears on its own; back off and retry. Payment only raises the limit."
      }
  }
}

/** The configured upgrade URL, bound to the account when there is one. */
export const upgradeUrl = (base: string, accountId: string | undefined) =>
  accountId === undefined
    ? base
    : `${base}${base.includes("?") ? "&" : "?"}account=${encodeURIComponent(accountId)}`

/**
 * The offer of a payment-fixable problem. A key's spend cap is not lifted by paying: its offer
 * (the contract has every INSUFFICIENT_CREDITS carry one) lists no packs and no rails, and its
 * `resume` says who can lift it.
 */
export const makeOffer = (
  code: ErrorCode,
  checkoutUrl: string,
  context: ProblemContext,
  keyCap = false
): Offer => ({
  offer_version: 1,
  reason: code,
  currency: "usd",
  packs: keyCap ? [] : context.packs.map((pack) => ({ ...pack })),
  rails: keyCap ? [] : [...context.rails],
  checkout_url: checkoutUrl,
  resume: resumeFor(code, keyCap),
  refund_policy: context.refundPolicy
})

/** Renders any `ApiError` as the body every surface (REST, MCP) sends. */
export const toProblem = (error: ApiError, context: ProblemContext): ProblemBody => {
  const spec = errorCatalog[error.code]
  const docUrl = links(context.baseUrl).errorDoc(error.code)
  // A limit's offer is for a trial account, whose plan payment raises; a limit on no account (a
  // mint, a sign-in, a recovery per IP or email) is not lifted by paying, so it offers nothing.
  const carriesOffer =
    spec.offer === "always" ||
    (spec.offer === "trial" && error.account !== undefined && !isPaid(error.account.plan))
  // The offer's checkout credits the account of the key that was refused; a free (trial-plan)
  // key's `upgrade_url` is the public upgrade page instead (the contract's rule 11).
  const checkoutUrl = upgradeUrl(context.upgradeUrl, error.account?.accountId)
  const freeKey = error.account !== undefined && !isPaid(error.account.plan)
  const body: { -readonly [K in keyof ProblemBody]: ProblemBody[K] } = {
    type: docUrl,
    title: spec.title,
    status: spec.status,
    detail: error.message,
    code: error.code,
    message: error.message,
    is_retriable: spec.retriable,
    doc_url: docUrl
  }
  if (carriesOffer) {
    body.upgrade_url = freeKey ? context.upgradeUrl : checkoutUrl
    const offer = makeOffer(
      error.code,
      checkoutUrl,
      context,
      error._tag === "InsufficientCredits" && error.limit === "key_cap"
    )
    body.offer =
      error._tag === "InsufficientCredits" && error.x402 !== undefined
        ? { ...offer, x402: error.x402 }
        : offer
  }
  switch (error._tag) {
    case "InvalidInput":
      if (error.param !== undefined) body.param = error.param
      if (error.closest_matches !== undefined) body.closest_matches = error.closest_matches
      break
    case "TrialCapExceeded":
      if (error.param !== undefined) body.param = error.param
      if (error.claim_url !== undefined) body.claim_url = error.claim_url
      break
    case "NotFound":
    case "Unauthorized":
      if (error.param !== undefined) body.param = error.param
      break
    case "InsufficientCredits":
      body.credits_required = error.credits_required
      body.credits_available = error.credits_available
      if (error.limit !== undefined) body.limit = error.limit
      if (error.cap_resets_at !== undefined) body.cap_resets_at = error.cap_resets_at
      if (error.reason !== undefined) body.reason = error.reason
      break
    case "QuoteExceedsMaxCredits":
      body.quoted = error.quoted
      body.max_credits = error.max_credits
      break
    case "NotEntitled":
      if (error.platform !== undefined) body.platform = error.platform
      if (error.entitled !== undefined) body.entitled = error.entitled
      break
    case "ConcurrencyLimit":
    case "RateLimited":
    case "UpstreamUnavailable":
      body.retry_after_seconds = error.retry_after_seconds
      break
    case "Internal":
      if (error.receipt_id !== undefined) body.receipt_id = error.receipt_id
      if (error.retry_after_seconds !== undefined) body.retry_after_seconds = error.retry_after_seconds
      break
    case "AuthRequired":
      if (error.account_ids !== undefined) body.account_ids = error.account_ids
      break
    case "KeyRequired": {
      const url = `${context.baseUrl}/v1/keys/mint`
      body.mint = { method: "POST", url, curl: `curl -s -X POST ${url}` }
      break
    }
  }
  return body
}
