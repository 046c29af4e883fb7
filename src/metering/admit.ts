import { Duration, Effect } from "effect"
import { AppConfig } from "../config.ts"
import type { Caller } from "../contract/api.ts"
import {
  InvalidInput,
  NotEntitled,
  QuoteExceedsMaxCredits,
  RateLimited,
  TrialCapExceeded
} from "../contract/errors.ts"
import { hasIdempotencyKeyLength, idempotencyKeyLengthText } from "../contract/idempotencyKey.ts"
import type { Account, KeyRecord } from "../domain/accounts.ts"
import { hasControlCharacter } from "../domain/controlCharacters.ts"
import { fingerprint } from "../domain/fingerprint.ts"
import { platformsOf } from "../domain/keyLimits.ts"
import { freeTier, isPaid, type Platform } from "../domain/plans.ts"
import { planRateWindowMs } from "../domain/policy.ts"
import { withFreshness } from "../domain/pricing.ts"
import type { AnyOperation } from "../operations/Operation.ts"
import { RateLimits } from "../services/RateLimits.ts"
import type { Admitted, CallInput, Meter, RateState } from "./call.ts"

/**
 * Admission: everything decided before anything is held. Entitlement, the Idempotency-Key's
 * shape, validation and the quote, `max_credits`, the trial's caps, and the rate token.
 */

export type AdmitError = InvalidInput | QuoteExceedsMaxCredits | TrialCapExceeded

/** Validate, quote, max_credits and trial caps: everything decided before anything is held. */
// hot path
export const admit = <R>(
  operation: AnyOperation<R>,
  caller: Caller["Service"],
  input: CallInput
): Effect.Effect<Admitted<R>, AdmitError, AppConfig> =>
  Effect.flatMap(AppConfig, ({ policy }): Effect.Effect<Admitted<R>, AdmitError> => {
    const { account } = caller
    const who = { accountId: account.id, plan: account.plan }
    const idempotencyKey = input.idempotencyKey
    if (
      idempotencyKey !== undefined &&
      (!hasIdempotencyKeyLength(idempotencyKey) || hasControlCharacter(idempotencyKey))
    ) {
      return Effect.fail(
        new InvalidInput({
          message: `Idempotency-Key must be ${idempotencyKeyLengthText} without control characters; a UUID is recommended.`,
          param: "Idempotency-Key"
        })
      )
    }
    // The surface decoded the parameters with this operation's own schema (a registry erases which).
    return Effect.flatMap(
      operation.prepare(input.params as never),
      (prepared): Effect.Effect<Admitted<R>, AdmitError> => {
        const quote = withFreshness(prepared.quote, input.freshness)
        if (input.maxCredits !== undefined && quote.credits > input.maxCredits) {
          return Effect.fail(
            new QuoteExceedsMaxCredits({
              message: `This call is quoted ${quote.credits} credits (${quote.lines.map((l) => `${l.item} ${l.credits}`).join(", ")}), above max_credits=${input.maxCredits}. Raise max_credits or ask for less.`,
              quoted: quote.credits,
              max_credits: input.maxCredits,
              account: who
            })
          )
        }

        // The trial's caps, as the plan describes them (`freeTier`, shown in the mint's `free_tier`
        // and `get_usage`) and the policy numbers them.
        if (!isPaid(account.plan)) {
          if (input.freshness !== freeTier.freshness) {
            return Effect.fail(
              new TrialCapExceeded({
                message: `Trial keys cannot ask for ${input.freshness} data: use freshness=${freeTier.freshness} (a recent cached copy, or a live fetch when there is none), or buy a pack.`,
                param: "freshness",
                account: who
              })
            )
          }
          if (prepared.searchLimit !== undefined && prepared.searchLimit > policy.trialSearchLimit) {
            return Effect.fail(
              new TrialCapExceeded({
                message: `Trial keys get at most ${policy.trialSearchLimit} results per search; send limit=${policy.trialSearchLimit} or less, or buy a pack.`,
                param: "limit",
                account: who
              })
            )
          }
          if (freeTier.firstPageOnly && prepared.continuation === true) {
            return Effect.fail(
              new TrialCapExceeded({
                message: "Trial keys get first pages only; a cursor page needs a paid key.",
                param: "cursor",
                account: who
              })
            )
          }
        }
        return Effect.succeed({
          operation,
          caller,
          input,
          who,
          args: prepared.args,
          quoted: quote.credits,
          fingerprint:
            idempotencyKey === undefined
              ? ""
              : fingerprint(account.id, operation.id, { args: prepared.args, freshness: input.freshness })
        })
      }
    )
  })

/** One call of the account's per-minute allowance; the caller gives it back if the call is turned away. */
// hot path
export const takeRateToken = <R>(call: Admitted<R>, meter: Meter) =>
  Effect.flatMap(AppConfig, ({ policy }) => {
    const { account } = call.caller
    const limit = policy.ratePerMinute[account.plan]
    return Effect.flatMap(
      Effect.flatMap(RateLimits, (limits) =>
        limits.take({ key: rateKey(account.id), limit, window: rateWindow })
      ),
      (token) => {
        meter.rate = {
          plan: account.plan,
          limit,
          windowSeconds: rateWindowSeconds,
          remaining: token.allowed ? token.remaining : 0,
          resetSeconds: token.allowed ? token.resetSeconds : token.retryAfterSeconds
        }
        return token.allowed
          ? Effect.succeed(token)
          : Effect.fail(
              new RateLimited({
                message: `At most ${limit} calls per minute on the ${account.plan} plan. Retry after retry_after_seconds.`,
                retry_after_seconds: token.retryAfterSeconds,
                account: call.who
              })
            )
      }
    )
  })

const rateKey = (accountId: string) => `plan:${accountId}`

/** The plan's window, as a Duration: the limiter would parse a duration text on every call. */
const rateWindow = Duration.millis(planRateWindowMs)
const rateWindowSeconds = planRateWindowMs / 1000

/** The rate limit of an answer given before the call took its token. */
// hot path
export const peekRate = (account: Account): Effect.Effect<RateState, never, AppConfig | RateLimits> =>
  Effect.flatMap(AppConfig, ({ policy }) => {
    const limit = policy.ratePerMinute[account.plan]
    return Effect.flatMap(RateLimits, (limits) =>
      Effect.map(
        limits.peek({ key: rateKey(account.id), limit, window: rateWindow }),
        (state): RateState => ({ plan: account.plan, limit, windowSeconds: rateWindowSeconds, ...state })
      )
    )
  })

/**
 * The entitlement step: NOT_ENTITLED when the account may not call the platform, or the key is
 * limited to other platforms.
 */
export const entitlement = (
  account: Account,
  key: KeyRecord,
  platform: Platform
): NotEntitled | undefined => {
  const entitled = platformsOf(account, key)
  if (entitled.includes(platform)) return undefined
  return new NotEntitled({
    message: account.entitlements.includes(platform)
      ? `This key may call ${entitled.length === 0 ? "no platform" : entitled.join(" and ")} only, not ${platform}. Use another key, or have its owner widen its platforms (POST /v1/keys/update).`
      : `This account is not enabled for ${platform}. GET /v1/usage lists the platforms this key can call.`,
    platform,
    entitled,
    account: { accountId: account.id, plan: account.plan }
  })
}
