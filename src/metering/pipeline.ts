import { Clock, Effect, Exit } from "effect"
import { AppConfig } from "../config.ts"
import type { Envelope } from "../contract/envelope.ts"
import {
  ConcurrencyLimit,
  type ErrorAccount,
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
import type { Account, KeyRecord } from "../domain/accounts.ts"
import { hasControlCharacter } from "../domain/controlCharacters.ts"
import { fingerprint } from "../domain/fingerprint.ts"
import { heartbeatMs } from "../domain/lease.ts"
import { isPaid, type Platform } from "../domain/plans.ts"
import { type Refund, realtimeSurcharge, withFreshness } from "../domain/pricing.ts"
import type { AnyOperation, Freshness, RunResult } from "../operations/Operation.ts"
import { IdempotencyStore } from "../services/IdempotencyStore.ts"
import { Ids } from "../services/Ids.ts"
import { Ledger, type Receipt, type Reservation, ReservationLost } from "../services/Ledger.ts"
import { RateLimits } from "../services/RateLimits.ts"
import type { Stored } from "../services/ResultMemory.ts"
import { Speculating, type Speculation } from "../services/Speculation.ts"

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
  /** The envelope as JSON, when the path made it already (REST answers it as is). */
  readonly json?: string
}

/** What admission makes of a request: the call as it will be claimed, reserved, run and settled. */
interface Admitted<R> {
  readonly operation: AnyOperation<R>
  readonly request: CallRequest
  readonly who: ErrorAccount
  readonly args: unknown
  readonly quoted: number
  /** What an Idempotency-Key is bound to: account, operation, canonical arguments and freshness. */
  readonly fingerprint: string
}

/**
 * The metered path every data operation runs, REST or MCP, as its steps:
 * admit (entitle, validate, quote, max_credits, trial caps), take a rate token, hold (claim the
 * Idempotency-Key, reserve the quote, which also takes the account's in-flight slot), run, settle
 * with refunds, and answer with the receipt.
 *
 * What the call holds is released by its own finaliser when the call fails or is interrupted: the
 * rate token when it is turned away before it runs, the claim and the reservation whenever it does
 * not settle. A failed call charges nothing.
 */
// Untraced: a span and a captured stack per call were a tenth of a cached call's CPU time. Chained
// rather than generators from here down to the cache hit's charge: V8 promotes what a generator
// holds while it is suspended under another one (README, "No generator suspended under another").
export const runMetered = <R>(operation: AnyOperation<R>, request: CallRequest) =>
  Effect.flatMap(admit(operation, request), (call) =>
    Effect.flatMap(
      Effect.flatMap(Ids, (ids) => ids.newId("rcpt")),
      (callId) =>
        // The call's id names its receipt, and fences its claim and its reservation: a call that
        // outlives its lease can neither complete, release nor settle what a newer call holds.
        // From the claim to the settlement nothing may be interrupted but the upstream run itself.
        Effect.uninterruptibleMask((restore) => Effect.scoped(metered(call, callId, restore))).pipe(
          Effect.catchTags({
            ReservationLost: (lost) => outlivedLease(lost, callId),
            ClaimLost: (lost) => outlivedLease(lost, callId)
          })
        )
    )
  )

type Restore = <A, E, R2>(effect: Effect.Effect<A, E, R2>) => Effect.Effect<A, E, R2>

/**
 * Inside the call's scope: a rate token, then a cache hit, or the full way (claim, reserve, run,
 * settle). The token goes back when the call is turned away before it runs.
 */
const metered = <R>(call: Admitted<R>, callId: string, restore: Restore) =>
  Effect.flatMap(takeRateToken(call), (token) => {
    const turnedAway = <A, E, R2>(effect: Effect.Effect<A, E, R2>) =>
      Effect.tapError(effect, () => token.giveBack)
    return Effect.flatMap(turnedAway(chargeIfHit(call, callId)), (hit) =>
      hit !== undefined
        ? Effect.succeed(hit)
        : Effect.flatMap(turnedAway(hold(call, callId)), (held) =>
            held._tag === "Replay"
              ? Effect.succeed(held.outcome)
              : Effect.tap(
                  runAndSettle(call, callId, held.reservation, restore).pipe(
                    Effect.catchDefect((defect) => failedWhileHeld(callId, defect))
                  ),
                  (outcome) => rememberResult(call, outcome.envelope)
                )
          )
    )
  })

type AdmitError = NotEntitled | InvalidInput | QuoteExceedsMaxCredits | TrialCapExceeded

/** Entitle, validate, quote, max_credits and trial caps: everything decided before anything is held. */
const admit = <R>(
  operation: AnyOperation<R>,
  request: CallRequest
): Effect.Effect<Admitted<R>, AdmitError, AppConfig> =>
  Effect.flatMap(AppConfig, ({ policy }): Effect.Effect<Admitted<R>, AdmitError> => {
    const { account } = request.caller
    const who = { accountId: account.id, plan: account.plan }

    const refused = entitlement(account, operation.platform)
    if (refused !== undefined) return Effect.fail(refused)

    const idempotencyKey = request.idempotencyKey
    if (
      idempotencyKey !== undefined &&
      (idempotencyKey.length < 8 || idempotencyKey.length > 128 || hasControlCharacter(idempotencyKey))
    ) {
      return Effect.fail(
        new InvalidInput({
          message:
            "Idempotency-Key must be 8 to 128 characters without control characters; a UUID is recommended.",
          param: "Idempotency-Key"
        })
      )
    }
    // The surface decoded the parameters with this operation's own schema (a registry erases which).
    return Effect.flatMap(
      operation.prepare(request.params as never),
      (prepared): Effect.Effect<Admitted<R>, AdmitError> => {
        const quote = withFreshness(prepared.quote, request.freshness)
        if (request.maxCredits !== undefined && quote.credits > request.maxCredits) {
          return Effect.fail(
            new QuoteExceedsMaxCredits({
              message: `This call is quoted ${quote.credits} credits (${quote.lines.map((l) => `${l.item} ${l.credits}`).join(", ")}), above max_credits=${request.maxCredits}. Raise max_credits or ask for less.`,
              quoted: quote.credits,
              max_credits: request.maxCredits,
              account: who
            })
          )
        }

        if (!isPaid(account.plan)) {
          if (request.freshness === "realtime") {
            return Effect.fail(
              new TrialCapExceeded({
                message:
                  "Trial keys cannot ask for realtime data: use freshness=recent (a recent cached copy, or a live fetch when there is none), or buy a pack.",
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
          if (prepared.continuation === true) {
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
          request,
          who,
          args: prepared.args,
          quoted: quote.credits,
          fingerprint:
            idempotencyKey === undefined
              ? ""
              : fingerprint(account.id, operation.id, { args: prepared.args, freshness: request.freshness })
        })
      }
    )
  })

/** The stored result of a completed Idempotency-Key, kept in memory for its replays. */
const rememberResult = Effect.fnUntraced(function* <R>(call: Admitted<R>, envelope: Envelope) {
  const key = call.request.idempotencyKey
  if (key === undefined) return
  const { policy } = yield* AppConfig
  const createdAt = Date.parse(envelope.receipt.created_at)
  ;(yield* IdempotencyStore).results.remember(call.request.caller.account.id, key, {
    fingerprint: call.fingerprint,
    envelope,
    replayUntil: createdAt + policy.replayWindowMs
  })
})

const replayOf = (envelope: Envelope): CallOutcome => ({
  envelope: { ...envelope, receipt: { ...envelope.receipt, replayed: true } },
  replayed: true
})

/** A replay from memory, its JSON made once for every replay of the key. */
const replayFromMemory = (stored: Stored): CallOutcome => {
  const outcome = replayOf(stored.envelope)
  stored.replayJson ??= JSON.stringify(outcome.envelope)
  return { ...outcome, json: stored.replayJson }
}

/** A run's answer: its data, how fresh the data was at `servedAt`, the cost and the receipt. */
const envelopeOf = (
  operation: Pick<AnyOperation, "kind">,
  freshness: Freshness,
  result: RunResult,
  servedAt: number,
  receipt: Receipt
): Envelope => ({
  schema_version: 2,
  kind: operation.kind,
  data: result.data,
  freshness: {
    requested: freshness,
    served: result.served,
    fetched_at: new Date(result.fetchedAt).toISOString(),
    cache_age_seconds: Math.max(0, Math.floor((servedAt - result.fetchedAt) / 1000))
  },
  cost: { quoted: receipt.quoted, charged: receipt.charged, refunded: receipt.quoted - receipt.charged },
  receipt
})

/** Stands in for the receipt's funding while the stored result is cut around it. */
const fundingMark = "\u0000funding\u0000"

/**
 * The cache-hit path. A paid call for `recent` data with an Idempotency-Key first looks for the
 * key's result in memory (a replay), then runs its operation on stored copies only (`Speculating`):
 * when every copy it needs is there, the data is in hand before any credit moves, and the charge,
 * the receipt and the stored result commit in one statement (`Ledger.chargeHit`), with no
 * reservation and no lease. `undefined` sends the call the full way: a copy missing, the run
 * failing, or the charge declined (not enough credits, a call in flight, an alert to send, the key
 * already used), since the full path answers each of those.
 */
const chargeIfHit = <R>(
  call: Admitted<R>,
  callId: string
): Effect.Effect<CallOutcome | undefined, ConcurrencyLimit, AppConfig | IdempotencyStore | Ledger | R> => {
  const key = call.request.idempotencyKey
  if (key === undefined) return Effect.succeed(undefined)
  const { request, operation } = call
  const { account } = request.caller
  return Effect.flatMap(IdempotencyStore, ({ results: memory }) =>
    Effect.flatMap(Ledger, (ledger) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const remembered = memory.replay(account.id, key, now)
        if (remembered !== undefined)
          return Effect.succeed(
            remembered.fingerprint === call.fingerprint ? replayFromMemory(remembered) : undefined
          )
        if (
          !operation.speculative ||
          request.freshness !== "recent" ||
          !isPaid(account.plan) ||
          call.quoted <= 0
        )
          return Effect.succeed(undefined)
        if (ledger.hitsUnderWay.has(account.id)) {
          return Effect.fail(
            new ConcurrencyLimit({
              message:
                "Another call on this account is in flight; one call at a time per account. Retry after retry_after_seconds.",
              retry_after_seconds: 1,
              account: call.who
            })
          )
        }
        ledger.hitsUnderWay.add(account.id)
        return Effect.ensuring(
          speculate(call, callId, key, now, ledger, memory),
          Effect.sync(() => ledger.hitsUnderWay.delete(account.id))
        )
      })
    )
  )
}

/** The cache hit itself: the run on stored copies, then the one-statement charge. */
const speculate = <R>(
  call: Admitted<R>,
  callId: string,
  key: string,
  now: number,
  ledger: Ledger["Service"],
  memory: IdempotencyStore["Service"]["results"]
): Effect.Effect<CallOutcome | undefined, never, AppConfig | R> => {
  const { request, operation } = call
  const { account, key: spendKey, ip } = request.caller
  const speculation: Speculation = { afterCharge: [] }
  return Effect.flatMap(
    Effect.exit(
      operation
        .run(call.args, { freshness: request.freshness })
        .pipe(Effect.provideService(Speculating, speculation))
    ),
    (ran) => {
      if (Exit.isFailure(ran)) return Effect.succeed(undefined)
      const result = ran.value
      return Effect.flatMap(AppConfig, ({ maxResponseBytes, policy }) => {
        const refunds = refundsOf(result, request.freshness).filter((refund) => refund.credits > 0)
        const refunded = Math.min(
          call.quoted,
          refunds.reduce((sum, refund) => sum + refund.credits, 0)
        )
        const charged = call.quoted - refunded
        const envelopeFor = (funding: Receipt["funding"] | typeof fundingMark): Envelope =>
          envelopeOf(operation, request.freshness, result, now, {
            id: callId,
            operation: operation.id,
            quoted: call.quoted,
            charged,
            refunds,
            funding: funding as Receipt["funding"],
            idempotency_key: key,
            replayed: false,
            created_at: new Date(now).toISOString(),
            ...(spendKey.id.startsWith("app_") ? { app_id: spendKey.id } : {})
          })
        const stored = JSON.stringify(envelopeFor(fundingMark))
        // The data is no longer than the whole envelope; a longer one is measured by the full path.
        if (stored.length > maxResponseBytes) return Effect.succeed(undefined)
        const cut = stored.lastIndexOf(JSON.stringify(fundingMark))
        const head = stored.slice(0, cut)
        const tail = stored.slice(cut + JSON.stringify(fundingMark).length)
        const charging = ledger
          .chargeHit({
            callId,
            accountId: account.id,
            keyId: spendKey.id,
            ip,
            operation: operation.id,
            quoted: call.quoted,
            charged,
            refunds,
            idempotencyKey: key,
            fingerprint: call.fingerprint,
            head,
            tail,
            now
          })
          .pipe(
            // The statement's fate unknown (a lost connection): the full path finds the key done if it committed.
            Effect.catchTag("SqlError", (error) =>
              Effect.as(
                Effect.logWarning("cache-hit charge failed; the call takes the full path", error),
                undefined
              )
            )
          )
        return Effect.flatMap(charging, (outcome) => {
          if (outcome === undefined || outcome._tag === "Declined") return Effect.succeed(undefined)
          const writes = Effect.forEach(
            speculation.afterCharge,
            (write) =>
              write.pipe(
                Effect.catchCause((cause) => Effect.logWarning("write after a charge failed", cause))
              ),
            { discard: true }
          )
          return Effect.map(writes, (): CallOutcome => {
            const envelope = envelopeFor(outcome.receipt.funding)
            memory.remember(account.id, key, {
              fingerprint: call.fingerprint,
              envelope,
              replayUntil: now + policy.replayWindowMs,
              size: stored.length
            })
            // The answer is the stored result, byte for byte.
            const json = `${head}${JSON.stringify(outcome.receipt.funding)}${tail}`
            return { envelope, replayed: false, json }
          })
        })
      })
    }
  )
}

/** One call of the account's per-minute allowance; the caller gives it back if the call is turned away. */
const takeRateToken = <R>(call: Admitted<R>) =>
  Effect.flatMap(AppConfig, ({ policy }) => {
    const { account } = call.request.caller
    return Effect.flatMap(
      Effect.flatMap(RateLimits, (limits) =>
        limits.take({
          key: `plan:${account.id}`,
          limit: policy.ratePerMinute[account.plan],
          window: "1 minute"
        })
      ),
      (token) =>
        token.allowed
          ? Effect.succeed(token)
          : Effect.fail(
              new RateLimited({
                message: `At most ${policy.ratePerMinute[account.plan]} calls per minute on the ${account.plan} plan. Retry after retry_after_seconds.`,
                retry_after_seconds: token.retryAfterSeconds,
                account: call.who
              })
            )
    )
  })

/**
 * Claims the Idempotency-Key (or finds its stored result), then reserves the quote. Each is
 * released, fenced by `callId`, if the call then fails: in reverse order, reservation first.
 */
const hold = Effect.fnUntraced(function* <R>(call: Admitted<R>, callId: string) {
  const claim = yield* claimKey(call, callId)
  if (claim._tag === "Replay") return claim
  const { request } = call
  const ledger = yield* Ledger
  const reservation = yield* Effect.acquireRelease(
    ledger
      .reserve({
        callId,
        accountId: request.caller.account.id,
        plan: request.caller.account.plan,
        keyId: request.caller.key.id,
        ip: request.caller.ip,
        operation: call.operation.id,
        quoted: call.quoted,
        realtime: request.freshness === "realtime",
        idempotencyKey: request.idempotencyKey
      })
      .pipe(Effect.catchTag("SqlError", Effect.die)),
    (reservation, exit) =>
      Exit.isSuccess(exit)
        ? Effect.void
        : ledger.release(reservation).pipe(
            Effect.flatMap((released) =>
              released ? Effect.void : Effect.logDebug("reservation already refunded (lease expired)")
            ),
            Effect.ignore
          )
  )
  return { _tag: "Held" as const, reservation }
})

type Claim = { readonly _tag: "Claimed" } | { readonly _tag: "Replay"; readonly outcome: CallOutcome }

const claimKey = Effect.fnUntraced(function* <R>(call: Admitted<R>, callId: string) {
  const { account } = call.request.caller
  const key = call.request.idempotencyKey
  if (key === undefined) {
    if (!isPaid(account.plan)) return { _tag: "Claimed" } satisfies Claim
    return yield* new IdempotencyKeyRequired({
      message:
        "Paid keys must send an Idempotency-Key header (8 to 128 characters, a UUID is best) on metered calls.",
      account: call.who
    })
  }
  const store = yield* IdempotencyStore
  const print = call.fingerprint
  const begun = yield* Effect.acquireRelease(
    Effect.orDie(store.begin(account.id, key, print, callId)),
    (begun, exit) =>
      begun._tag !== "Fresh" || Exit.isSuccess(exit)
        ? Effect.void
        : store.release(account.id, key, callId).pipe(
            Effect.flatMap((released) =>
              released
                ? Effect.void
                : Effect.logDebug("idempotency claim already taken over; left to its new holder")
            ),
            Effect.ignore
          )
  )
  switch (begun._tag) {
    case "Fresh":
      return { _tag: "Claimed" } satisfies Claim
    case "Replay": {
      const stored = JSON.parse(begun.response) as Envelope
      yield* rememberResult(call, stored)
      return { _tag: "Replay", outcome: replayOf(stored) } satisfies Claim
    }
    case "Reused":
      return yield* new IdempotencyKeyReused({
        message:
          "This Idempotency-Key was already used with other arguments. Use a fresh key for a new call.",
        account: call.who
      })
    case "Running":
      return yield* new ConcurrencyLimit({
        message:
          "The original call with this Idempotency-Key is still running. Retry after retry_after_seconds to get its result.",
        retry_after_seconds: begun.retryAfterSeconds,
        account: call.who
      })
    case "Expired":
      return yield* new NotFound({
        message:
          "The stored result of this Idempotency-Key has expired (24 hours). Resend with a fresh Idempotency-Key.",
        account: call.who
      })
  }
})

/**
 * Runs the upstream (the one interruptible step) while the call beats, checks the response size,
 * then settles: the charge and the stored result commit together.
 */
const runAndSettle = Effect.fnUntraced(function* <R>(
  call: Admitted<R>,
  callId: string,
  reservation: Reservation,
  restore: Restore
) {
  const { request, operation } = call
  const { maxResponseBytes } = yield* AppConfig
  const ledger = yield* Ledger
  // While the upstream runs, the call beats (so a waiting caller knows it is alive), and stops as
  // soon as its reservation is found gone (its lease expired and it was refunded).
  const beating = ledger.heartbeat(callId).pipe(
    Effect.catchTag("SqlError", () => Effect.succeed(true)),
    Effect.delay(heartbeatMs),
    Effect.flatMap((alive) => (alive ? Effect.void : Effect.fail(new ReservationLost({ callId })))),
    Effect.forever
  )
  const result = yield* restore(
    Effect.raceFirst(operation.run(call.args, { freshness: request.freshness }), beating)
  )

  const size = JSON.stringify(result.data).length
  if (size > maxResponseBytes) {
    return yield* new PayloadTooLarge({
      message: `The response would be ${size} bytes, above the ${maxResponseBytes}-byte limit. Ask for less (fewer ids, sections or comments); nothing was charged.`,
      account: call.who
    })
  }

  const envelopeFor = (receipt: Receipt): Envelope =>
    envelopeOf(operation, request.freshness, result, reservation.createdAt, receipt)
  const key = request.idempotencyKey
  const store = yield* IdempotencyStore
  const receipt = yield* ledger
    .settle(reservation, refundsOf(result, request.freshness), (receipt) =>
      key === undefined
        ? Effect.void
        : store.complete(request.caller.account.id, key, callId, JSON.stringify(envelopeFor(receipt)))
    )
    .pipe(Effect.catchTag("SqlError", Effect.die))
  return { envelope: envelopeFor(receipt), replayed: false } satisfies CallOutcome
})

/** A defect once the call has its row: the answer names the call, so it can be reported. */
const failedWhileHeld = (callId: string, defect: unknown) =>
  Effect.andThen(
    Effect.logError("metered call failed", { callId }, defect),
    Effect.fail(
      new Internal({
        message: `The service failed while running this call (receipt ${callId}); nothing was charged. Retry once; if it fails again, report the receipt id.`,
        receipt_id: callId
      })
    )
  )

/**
 * The call stalled past its lease (a paused process, a hung upstream): its reservation was refunded
 * or its key taken over by a newer call, and it was fenced off. It charged nothing and touched
 * nothing of the newer call's; the same Idempotency-Key, sent again, returns that call's result or
 * runs the call afresh.
 */
const outlivedLease = (lost: { readonly _tag: string }, callId: string) =>
  Effect.andThen(
    Effect.logWarning(`metered call outlived its lease (${lost._tag}); fenced off, nothing charged`, {
      callId
    }),
    Effect.fail(
      new Internal({
        message: `This call (receipt ${callId}) took longer than its lease and was stopped; nothing was charged. Retry with the SAME Idempotency-Key: you get the result of the call that replaced it, or a fresh run.`,
        receipt_id: callId,
        retry_after_seconds: 1
      })
    )
  )

/** The operation's own refunds, plus the realtime surcharge when a cached copy had to stand in. */
const refundsOf = (result: RunResult, freshness: Freshness): ReadonlyArray<Refund> =>
  freshness === "realtime" && result.served === "cached_fallback"
    ? [...result.refunds, { reason: "realtime_fallback", credits: realtimeSurcharge }]
    : result.refunds

/** The entitlement step: NOT_ENTITLED when the account may not call the platform. */
export const entitlement = (account: Account, platform: Platform): NotEntitled | undefined =>
  account.entitlements.includes(platform)
    ? undefined
    : new NotEntitled({
        message: `This account is not enabled for ${platform}. GET /v1/usage lists the platforms this key can call.`,
        platform,
        entitled: account.entitlements,
        account: { accountId: account.id, plan: account.plan }
      })
