import { Effect, Exit } from "effect"
import { AppConfig } from "../config.ts"
import type { Envelope } from "../contract/envelope.ts"
import {
  ConcurrencyLimit,
  IdempotencyKeyRequired,
  IdempotencyKeyReused,
  Internal,
  InvalidInput,
  NotEntitled,
  NotFound,
  PayloadTooLarge,
  QuoteExceedsMaxCredits,
  RateLimited,
  TrialCapExceeded
} from "../contract/errors.ts"
import { fingerprint } from "../domain/fingerprint.ts"
import { heartbeatMs } from "../domain/lease.ts"
import { isPaid, type Platform } from "../domain/plans.ts"
import { type Refund, realtimeSurcharge, withFreshness } from "../domain/pricing.ts"
import type { AnyOperation, Freshness, RunResult } from "../operations/Operation.ts"
import type { Account, KeyRecord } from "../services/Accounts.ts"
import { IdempotencyStore } from "../services/IdempotencyStore.ts"
import { Ids } from "../services/Ids.ts"
import { Ledger, type Receipt, ReservationLost } from "../services/Ledger.ts"
import { RateLimits } from "../services/RateLimits.ts"

export interface CallRequest {
  readonly caller: { readonly key: KeyRecord; readonly account: Account; readonly ip: string }
  /** The operation's own parameters, decoded by the surface. */
  readonly params: unknown
  readonly freshness: Freshness
  readonly maxCredits: number | undefined
  readonly idempotencyKey: string | undefined
}

export interface CallOutcome {
  readonly envelope: Envelope
  readonly replayed: boolean
}

/**
 * The metered path every data operation runs, REST or MCP:
 * entitle, validate, quote, max_credits, trial caps, rate limit, idempotency, then reserve
 * (which takes the account's in-flight slot), run, settle with refunds, and the receipt.
 * Anything that fails after the reservation releases it: a failed call charges nothing.
 */
export const runMetered = Effect.fn("runMetered")(function* <R>(
  operation: AnyOperation<R>,
  request: CallRequest
) {
  const { account, key, ip } = request.caller
  const { maxResponseBytes, policy } = yield* AppConfig
  const who = { accountId: account.id, plan: account.plan }

  // Entitle
  if (!account.entitlements.includes(operation.platform))
    return yield* notEntitled(account, operation.platform)

  // Validate
  const idempotencyKey = request.idempotencyKey
  if (
    idempotencyKey !== undefined &&
    (idempotencyKey.length < 8 || idempotencyKey.length > 128 || controlCharacter.test(idempotencyKey))
  ) {
    return yield* new InvalidInput({
      message:
        "Idempotency-Key must be 8 to 128 characters without control characters; a UUID is recommended.",
      param: "Idempotency-Key"
    })
  }
  const prepared = yield* operation.prepare(request.params as never)

  // Quote and max_credits
  const quote = withFreshness(prepared.quote, request.freshness)
  if (request.maxCredits !== undefined && quote.credits > request.maxCredits) {
    return yield* new QuoteExceedsMaxCredits({
      message: `This call is quoted ${quote.credits} credits (${quote.lines.map((l) => `${l.item} ${l.credits}`).join(", ")}), above max_credits=${request.maxCredits}. Raise max_credits or ask for less.`,
      quoted: quote.credits,
      max_credits: request.maxCredits,
      account: who
    })
  }

  // Trial caps
  if (!isPaid(account.plan)) {
    if (request.freshness === "realtime") {
      return yield* new TrialCapExceeded({
        message: "Trial keys are cached-only: use freshness=recent, or buy a pack for realtime data.",
        param: "freshness",
        account: who
      })
    }
    if (prepared.searchLimit !== undefined && prepared.searchLimit > policy.trialSearchLimit) {
      return yield* new TrialCapExceeded({
        message: `Trial keys get at most ${policy.trialSearchLimit} results per search; send limit=${policy.trialSearchLimit} or less, or buy a pack.`,
        param: "limit",
        account: who
      })
    }
    if (prepared.continuation === true) {
      return yield* new TrialCapExceeded({
        message: "Trial keys get first pages only; a cursor page needs a paid key.",
        param: "cursor",
        account: who
      })
    }
  }

  // Rate limit: its token is given back if a later check rejects the call.
  const limits = yield* RateLimits
  const limit = yield* limits.take({
    key: `plan:${account.id}`,
    limit: policy.ratePerMinute[account.plan],
    window: "1 minute"
  })
  if (!limit.allowed) {
    return yield* new RateLimited({
      message: `At most ${policy.ratePerMinute[account.plan]} calls per minute on the ${account.plan} plan. Retry after retry_after_seconds.`,
      retry_after_seconds: limit.retryAfterSeconds,
      account: who
    })
  }
  // A call rejected before it runs (idempotency, concurrency, funds) gives its token back.
  let running = false
  // The call's id names its receipt, and fences its idempotency claim and its reservation: a call
  // that outlives its lease can neither complete, release nor settle what a newer call holds.
  const callId = yield* (yield* Ids).newId("rcpt")

  // From the idempotency claim to the settlement nothing may be interrupted but the upstream run
  // itself: a client that hangs up between a claim (or a reservation) and the cleanup attached to it
  // would otherwise leave the key 'running' and the account's slot taken until their leases expire.
  return yield* Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      // Idempotency
      const store = yield* IdempotencyStore
      if (idempotencyKey === undefined && isPaid(account.plan)) {
        return yield* new IdempotencyKeyRequired({
          message:
            "Paid keys must send an Idempotency-Key header (8 to 128 characters, a UUID is best) on metered calls.",
          account: who
        })
      }
      const print = fingerprint(account.id, operation.id, {
        args: prepared.args,
        freshness: request.freshness
      })
      if (idempotencyKey !== undefined) {
        const begun = yield* Effect.orDie(store.begin(account.id, idempotencyKey, print, callId))
        switch (begun._tag) {
          case "Replay": {
            const stored = JSON.parse(begun.response) as Envelope
            return { envelope: { ...stored, receipt: { ...stored.receipt, replayed: true } }, replayed: true }
          }
          case "Reused":
            return yield* new IdempotencyKeyReused({
              message:
                "This Idempotency-Key was already used with other arguments. Use a fresh key for a new call.",
              account: who
            })
          case "Running":
            return yield* new ConcurrencyLimit({
              message:
                "The original call with this Idempotency-Key is still running. Retry after retry_after_seconds to get its result.",
              retry_after_seconds: begun.retryAfterSeconds,
              account: who
            })
          case "Expired":
            return yield* new NotFound({
              message:
                "The stored result of this Idempotency-Key has expired (24 hours). Resend with a fresh Idempotency-Key.",
              account: who
            })
          case "Fresh":
            break
        }
      }
      const releaseKey =
        idempotencyKey === undefined
          ? Effect.void
          : store.release(account.id, idempotencyKey, callId).pipe(
              Effect.flatMap((released) =>
                released
                  ? Effect.void
                  : Effect.logDebug("idempotency claim already taken over; left to its new holder")
              ),
              Effect.ignore
            )

      return yield* Effect.gen(function* () {
        // Reserve (takes the one in-flight slot of the account)
        const ledger = yield* Ledger
        const reservation = yield* ledger
          .reserve({
            callId,
            accountId: account.id,
            plan: account.plan,
            keyId: key.id,
            ip,
            operation: operation.id,
            quoted: quote.credits,
            realtime: request.freshness === "realtime",
            idempotencyKey
          })
          .pipe(Effect.catchTag("SqlError", Effect.die))

        // Run, then settle; any failure or interruption releases the reservation.
        return yield* Effect.gen(function* () {
          running = true
          // While the upstream runs, the call beats (so a waiting caller knows it is alive), and
          // stops as soon as its reservation is found gone (its lease expired and it was refunded).
          const beating = ledger.heartbeat(callId).pipe(
            Effect.catchTag("SqlError", () => Effect.succeed(true)),
            Effect.delay(heartbeatMs),
            Effect.flatMap((alive) => (alive ? Effect.void : Effect.fail(new ReservationLost({ callId })))),
            Effect.forever
          )
          const result = yield* restore(
            Effect.raceFirst(operation.run(prepared.args, { freshness: request.freshness }), beating)
          )
          const size = JSON.stringify(result.data).length
          if (size > maxResponseBytes) {
            return yield* new PayloadTooLarge({
              message: `The response would be ${size} bytes, above the ${maxResponseBytes}-byte limit. Ask for less (fewer ids, sections or comments); nothing was charged.`,
              account: who
            })
          }
          const envelopeFor = (receipt: Receipt): Envelope => ({
            schema_version: 2,
            kind: operation.kind,
            data: result.data,
            freshness: {
              requested: request.freshness,
              served: result.served,
              fetched_at: new Date(result.fetchedAt).toISOString(),
              cache_age_seconds: Math.max(0, Math.floor((reservation.createdAt - result.fetchedAt) / 1000))
            },
            cost: {
              quoted: receipt.quoted,
              charged: receipt.charged,
              refunded: receipt.quoted - receipt.charged
            },
            receipt
          })
          const receipt = yield* ledger
            .settle(reservation, refundsOf(result, request.freshness), (receipt) =>
              idempotencyKey === undefined
                ? Effect.void
                : store.complete(account.id, idempotencyKey, callId, JSON.stringify(envelopeFor(receipt)))
            )
            .pipe(Effect.catchTag("SqlError", Effect.die))
          return { envelope: envelopeFor(receipt), replayed: false }
        }).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit)
              ? Effect.void
              : ledger.release(reservation).pipe(
                  Effect.flatMap((released) =>
                    released ? Effect.void : Effect.logDebug("reservation already refunded (lease expired)")
                  ),
                  Effect.ignore
                )
          ),
          // A defect once the call has its row: the answer names the call, so it can be reported.
          Effect.catchDefect((defect) =>
            Effect.andThen(
              Effect.logError("metered call failed", { callId }, defect),
              Effect.fail(
                new Internal({
                  message: `The service failed while running this call (receipt ${callId}); nothing was charged. Retry once; if it fails again, report the receipt id.`,
                  receipt_id: callId
                })
              )
            )
          )
        )
      }).pipe(Effect.onError(() => releaseKey))
    })
  ).pipe(
    Effect.catchTags({ ReservationLost: outlivedLease, ClaimLost: outlivedLease }),
    Effect.tapError(() => (running ? Effect.void : limit.giveBack))
  )
})

/**
 * The call stalled past its lease (a paused process, a hung upstream): its reservation was refunded
 * or its key taken over by a newer call, and it was fenced off. It charged nothing and touched
 * nothing of the newer call's; the same Idempotency-Key, sent again, returns that call's result or
 * runs the call afresh.
 */
const outlivedLease = (lost: { readonly _tag: string }) =>
  Effect.andThen(
    Effect.logWarning(`metered call outlived its lease (${lost._tag}); fenced off, nothing charged`),
    Effect.fail(
      new Internal({
        message:
          "This call took longer than its lease and was stopped; nothing was charged. Retry with the SAME Idempotency-Key: you get the result of the call that replaced it, or a fresh run.",
        retry_after_seconds: 1
      })
    )
  )

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const controlCharacter = /[\u0000-\u001f\u007f]/

/** The operation's own refunds, plus the realtime surcharge when a cached copy had to stand in. */
const refundsOf = (result: RunResult, freshness: Freshness): ReadonlyArray<Refund> =>
  freshness === "realtime" && result.served === "cached_fallback"
    ? [...result.refunds, { reason: "realtime_fallback", credits: realtimeSurcharge }]
    : result.refunds

export const notEntitled = (account: Account, platform: Platform) =>
  new NotEntitled({
    message: `This account is not enabled for ${platform}. GET /v1/usage lists the platforms this key can call.`,
    platform,
    entitled: account.entitlements,
    account: { accountId: account.id, plan: account.plan }
  })
