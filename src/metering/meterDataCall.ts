import { Clock, Duration, Effect, Exit, Result, Tracer } from "effect"
import { AppConfig } from "../config.ts"
import type { Caller } from "../contract/api.ts"
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
  TrialCapExceeded,
  type Unauthorized
} from "../contract/errors.ts"
import { hasIdempotencyKeyLength, idempotencyKeyLengthText } from "../contract/idempotencyKey.ts"
import type { Account, IdentityVersions, KeyRecord } from "../domain/accounts.ts"
import { hasControlCharacter } from "../domain/controlCharacters.ts"
import { fingerprint } from "../domain/fingerprint.ts"
import { platformsOf } from "../domain/keyLimits.ts"
import { heartbeatMs } from "../domain/lease.ts"
import { freeTier, isPaid, type Plan, type Platform } from "../domain/plans.ts"
import { planRateWindowMs, windowWords } from "../domain/policy.ts"
import { type Refund, realtimeSurcharge, settlement, withFreshness } from "../domain/pricing.ts"
import { callsHeld, recordMeteredCall } from "../observability/metrics.ts"
import type { AnyOperation, Freshness, RunError, RunResult } from "../operations/Operation.ts"
import { Speculating, type Speculation } from "../services/Cache.ts"
import { Ids } from "../services/Ids.ts"
import { RateLimits } from "../services/RateLimits.ts"
import { HitCharges } from "./HitCharges.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"
import {
  type Remaining,
  type Reservation,
  ReservationLost,
  Reservations,
  type ReserveError
} from "./Reservations.ts"
import type { ResultMemory, Stored } from "./ResultMemory.ts"
import { type CallResult, envelopeJson, envelopeOf, type Receipt, receiptOf } from "./receipt.ts"

/**
 * How a caller taken from the instance's memory of spend keys, before the reports committed before
 * the request were applied, is confirmed (`Bearers.authenticateToCharge`). A cache hit's charge
 * acts on it as it is, checking `versions` in its statement; every other answer confirms it first.
 */
export interface Unconfirmed {
  /** The identity versions it was read at. */
  readonly versions: IdentityVersions
  /**
   * `undefined` when it still holds once every report committed before the call is applied;
   * otherwise the key and account as the database has them now, or why the key cannot spend.
   */
  readonly confirm: Effect.Effect<Identity | undefined, Unauthorized>
  /** The key and account as the database has them now (its versions were found changed). */
  readonly reread: Effect.Effect<Identity, Unauthorized>
}

/** A key and its account. */
export interface Identity {
  readonly key: KeyRecord
  readonly account: Account
}

/** Whom a data call runs as: the surface's caller, unconfirmed when it came from memory so. */
export type MeteredCaller = Caller["Service"] & { readonly unconfirmed?: Unconfirmed | undefined }

/**
 * The caller, taken from memory unconfirmed, no longer holds: the call starts again as `identity`
 * (read from the database), having kept nothing. Never leaves the front door.
 */
class Reauthenticate {
  readonly _tag = "Reauthenticate"
  readonly identity: Identity
  constructor(identity: Identity) {
    this.identity = identity
  }
}

/** What a surface decodes from its wire (a query string, a tool's arguments) for a data call. */
export interface CallInput {
  /** The operation's own parameters, decoded with its schema. */
  readonly params: unknown
  readonly freshness: Freshness
  readonly maxCredits: number | undefined
  readonly idempotencyKey: string | undefined
}

export interface CallOutcome {
  /** The answer's envelope; a replay parses it from the stored JSON only when a surface reads it. */
  readonly envelope: Envelope
  /** The envelope's receipt, for what a surface reports beside the answer without the envelope. */
  readonly receipt: Receipt
  readonly replayed: boolean
  /** The envelope as JSON, when the path made it already (REST answers it as is). */
  readonly json?: string
  /** What the account and the key have left once charged; undefined on a replay. */
  readonly remaining?: Remaining
}

/** The plan's per-minute allowance and what is left of it (RateLimit-Policy, RateLimit). */
export interface RateState {
  readonly plan: Plan
  readonly limit: number
  readonly windowSeconds: number
  readonly remaining: number
  readonly resetSeconds: number
}

/**
 * A metered call's answer with what every surface reports beside it: the rate limit always, and
 * once charged what was charged and what is left (REST's usage headers, MCP's `_meta`).
 */
export interface Metered<E> {
  readonly result: Result.Result<CallOutcome, E | MeteringError>
  readonly rate: RateState
}

/** What admission makes of a call: the call as it will be claimed, reserved, run and settled. */
interface Admitted<R> {
  readonly operation: AnyOperation<R>
  readonly caller: Caller["Service"]
  readonly input: CallInput
  readonly who: ErrorAccount
  readonly args: unknown
  readonly quoted: number
  /** What an Idempotency-Key is bound to: account, operation, canonical arguments and freshness. */
  readonly fingerprint: string
}

/**
 * The front door of every data call, REST or MCP: the surface has resolved the caller from its
 * bearer and hands over its decoding of the wire (`input`, run here after entitlement), and gets
 * the outcome or one of the 17 problems back. In order, each once: entitle, decode, admit
 * (Idempotency-Key shape, validate and quote, `max_credits`, trial caps), take a rate token, then
 * either charge a cache hit in one statement, or hold (claim the Idempotency-Key, reserve the
 * quote with the account's in-flight slot), run, settle with refunds; answer with the receipt.
 *
 * What the call holds is released by its own finaliser when the call fails or is interrupted: the
 * rate token when it is turned away before it runs, the claim and the reservation whenever it does
 * not settle. A failed call charges nothing.
 */
// hot path
export const meterDataCall = <R, E>(
  operation: AnyOperation<R>,
  caller: MeteredCaller,
  input: Effect.Effect<CallInput, E>
): Effect.Effect<Metered<E>, never, MeteringServices | R> => {
  const meter: Meter = { rate: undefined, unconfirmed: caller.unconfirmed }
  const refused = entitlement(caller.account, caller.key, operation.platform)
  const call: Effect.Effect<CallOutcome, E | MeteringError | Reauthenticate, MeteringServices | R> =
    refused !== undefined
      ? Effect.fail(refused)
      : Effect.flatMap(input, (decoded) =>
          Effect.flatMap(admit(operation, caller, decoded), (admitted) =>
            Effect.flatMap(
              Effect.flatMap(Ids, (ids) => ids.newId("rcpt")),
              (callId) =>
                // The call's id names its receipt, and fences its claim and its reservation: a call
                // that outlives its lease can neither complete, release nor settle what a newer call
                // holds. From the claim to the settlement nothing may be interrupted but the run.
                Effect.uninterruptibleMask((restore) => metered(admitted, callId, restore, meter)).pipe(
                  Effect.catchTags({
                    ReservationLost: (lost) => outlivedLease(lost, callId),
                    ClaimLost: (lost) => outlivedLease(lost, callId)
                  })
                )
            )
          )
        )
  // A refusal is answered to a confirmed caller too.
  const confirmedCall = Effect.catch(call, (failure) =>
    failure instanceof Reauthenticate
      ? Effect.fail(failure)
      : Effect.andThen(confirmed(meter), Effect.fail(failure))
  )
  const answered = Effect.flatMap(
    Effect.result(confirmedCall),
    (attempt): Effect.Effect<Metered<E>, never, MeteringServices | R> => {
      if (Result.isFailure(attempt) && attempt.failure instanceof Reauthenticate)
        return meterDataCall(operation, { ...attempt.failure.identity, ip: caller.ip }, input)
      const result = attempt as Result.Result<CallOutcome, E | MeteringError>
      recordOutcome(operation, result)
      return meter.rate !== undefined
        ? Effect.succeed({ result, rate: meter.rate })
        : Effect.map(peekRate(caller.account), (rate) => ({ result, rate }))
    }
  )
  // A span only when a tracer exports them (OTEL_EXPORTER_OTLP_ENDPOINT): untraced calls pay one check.
  return Effect.withFiber((fiber) =>
    fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer
      ? answered
      : answered.pipe(
          Effect.tap(({ result }) =>
            Result.isSuccess(result)
              ? Effect.annotateCurrentSpan("receipt", result.success.receipt.id)
              : Effect.annotateCurrentSpan("error.code", codeOf(result.failure))
          ),
          Effect.withSpan("meterDataCall", {
            kind: "internal",
            attributes: { operation: operation.id, account: caller.account.id, key: caller.key.id }
          })
        )
  )
}

/**
 * Everything but a charged cache hit acts on a confirmed caller: one taken from memory unconfirmed
 * is confirmed here, once. When it no longer holds the call starts again as the database has it
 * (`Reauthenticate`), or is refused as UNAUTHORIZED.
 */
// hot path
const confirmed = (meter: Meter): Effect.Effect<void, Unauthorized | Reauthenticate> => {
  const pending = meter.unconfirmed
  if (pending === undefined) return Effect.void
  meter.unconfirmed = undefined
  return Effect.flatMap(pending.confirm, (fresh) =>
    fresh === undefined ? Effect.void : Effect.fail(new Reauthenticate(fresh))
  )
}

const codeOf = (failure: unknown): string =>
  typeof failure === "object" && failure !== null && "code" in failure && typeof failure.code === "string"
    ? failure.code
    : "INTERNAL"

/** Which free budget a refusal says is used up: the shared one, or the IP's of the day (a trial cap naming no parameter). */
const budgetOf = (code: string, failure: unknown): "ip" | "shared" | undefined =>
  code === "BUDGET_EXHAUSTED"
    ? "shared"
    : code === "TRIAL_CAP_EXCEEDED" && failure instanceof TrialCapExceeded && failure.param === undefined
      ? "ip"
      : undefined

/** The call's outcome in the metrics: ok, replayed or its error code, and the credits it charged by source. */
// hot path
const recordOutcome = <E>(operation: AnyOperation, result: Result.Result<CallOutcome, E>) => {
  if (Result.isFailure(result)) {
    const code = codeOf(result.failure)
    recordMeteredCall(operation.id, operation.platform, code, undefined, budgetOf(code, result.failure))
    return
  }
  const { replayed, receipt } = result.success
  recordMeteredCall(
    operation.id,
    operation.platform,
    replayed ? "replayed" : "ok",
    replayed ? undefined : receipt.funding
  )
}

/**
 * What a call learns on its way: the rate limit as its token left it, which its answer reports, and
 * whether its caller is still to be confirmed.
 */
interface Meter {
  rate: RateState | undefined
  unconfirmed: Unconfirmed | undefined
}

/** Every problem a metered call can answer besides its surface's decoding. */
export type MeteringError =
  | NotEntitled
  | InvalidInput
  | QuoteExceedsMaxCredits
  | TrialCapExceeded
  | RateLimited
  | ConcurrencyLimit
  | IdempotencyKeyRequired
  | IdempotencyKeyReused
  | NotFound
  | PayloadTooLarge
  | Internal
  | ReserveError
  | RunError
  | Unauthorized

/** The services the front door runs on. */
export type MeteringServices = AppConfig | Ids | RateLimits | IdempotencyStore | HitCharges | Reservations

type Restore = <A, E, R2>(effect: Effect.Effect<A, E, R2>) => Effect.Effect<A, E, R2>

/**
 * A rate token, then a cache hit, or the full way (claim, reserve, run, settle) in a scope of its
 * own that releases what it holds. The token goes back when the call is turned away before it runs.
 */
// hot path
const metered = <R>(call: Admitted<R>, callId: string, restore: Restore, meter: Meter) =>
  Effect.flatMap(takeRateToken(call, meter), (token) => {
    const turnedAway = <A, E, R2>(effect: Effect.Effect<A, E, R2>) =>
      Effect.tapError(effect, () =>
        Effect.andThen(
          token.giveBack,
          Effect.sync(() => {
            if (meter.rate !== undefined) meter.rate = { ...meter.rate, remaining: meter.rate.remaining + 1 }
          })
        )
      )
    // A cache hit holds nothing; the full way's scope holds its claim and its reservation.
    return Effect.flatMap(turnedAway(chargeIfHit(call, callId, meter)), (hit) =>
      hit !== undefined
        ? Effect.succeed(hit)
        : Effect.scoped(
            Effect.flatMap(turnedAway(hold(call, callId)), (held) =>
              held._tag === "Replay"
                ? Effect.succeed(held.outcome)
                : runAndSettle(call, callId, held.reservation, restore).pipe(
                    Effect.catchDefect((defect) => failedWhileHeld(callId, defect))
                  )
            )
          )
    )
  })

type AdmitError = InvalidInput | QuoteExceedsMaxCredits | TrialCapExceeded

/** Validate, quote, max_credits and trial caps: everything decided before anything is held. */
// hot path
const admit = <R>(
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

/** The stored result of a completed Idempotency-Key, kept in memory for its replays. */
// hot path
const rememberResult = <R>(call: Admitted<R>, resultJson: string, receipt: Receipt) => {
  const key = call.input.idempotencyKey
  if (key === undefined) return Effect.void
  return Effect.flatMap(AppConfig, ({ policy }) =>
    Effect.map(IdempotencyStore, (store) =>
      store.results.remember(call.caller.account.id, key, {
        fingerprint: call.fingerprint,
        json: resultJson,
        answer: false,
        receipt,
        replayUntil: Date.parse(receipt.created_at) + policy.replayWindowMs
      })
    )
  )
}

/** A completed key's answer again, from its stored result: the receipt marked `replayed`, and the JSON with it. */
const replayedAnswer = (resultJson: string, receipt: Receipt) => {
  const replayed = { ...receipt, replayed: true }
  return { json: envelopeJson(resultJson, replayed), receipt: replayed }
}

/**
 * A replay's outcome from its JSON and receipt. REST answers the JSON; the envelope's objects are
 * parsed from it only if a surface asks for them (MCP's structured content).
 *
 * A class, for its getter on the prototype: an object literal with a getter gets a hidden class of
 * its own (V8 keeps accessors in the class), made in the old generation on every replay, and that
 * class holds the getter's closure and through it the replay's JSON, so every replay's answer
 * outlived the young generation (docs/performance.md, round 22).
 */
class ReplayOutcome implements CallOutcome {
  readonly replayed = true
  readonly json: string
  readonly receipt: Receipt
  private parsed: Envelope | undefined
  constructor(json: string, receipt: Receipt) {
    this.json = json
    this.receipt = receipt
  }
  get envelope(): Envelope {
    this.parsed ??= JSON.parse(this.json) as Envelope
    return this.parsed
  }
}

const answerOf = ({ json, receipt }: { readonly json: string; readonly receipt: Receipt }): CallOutcome =>
  new ReplayOutcome(json, receipt)

const replayOf = (resultJson: string, receipt: Receipt): CallOutcome =>
  answerOf(replayedAnswer(resultJson, receipt))

/** A replay from this instance's memory; the first one keeps the answer it makes in the result's place. */
const replayFromMemory = (
  memory: ResultMemory,
  accountId: string,
  key: string,
  stored: Stored
): CallOutcome => {
  if (stored.answer) return answerOf(stored)
  const answer = replayedAnswer(stored.json, stored.receipt)
  memory.remember(accountId, key, { ...stored, ...answer, answer: true })
  return answerOf(answer)
}

/** A run's result as its Idempotency-Key stores it: how fresh the data was at `servedAt`. */
const resultOf = (
  operation: Pick<AnyOperation, "kind">,
  freshness: Freshness,
  result: RunResult,
  servedAt: number
): CallResult => ({
  schema_version: 2,
  kind: operation.kind,
  data: result.data,
  freshness: {
    requested: freshness,
    served: result.served,
    fetched_at: new Date(result.fetchedAt).toISOString(),
    cache_age_seconds: Math.max(0, Math.floor((servedAt - result.fetchedAt) / 1000))
  }
})

const inFlight = (who: ErrorAccount) =>
  new ConcurrencyLimit({
    message:
      "Another call on this account is in flight; one call at a time per account. Retry after retry_after_seconds.",
    retry_after_seconds: 1,
    account: who
  })

/**
 * The cache-hit path. A call for `recent` data with an Idempotency-Key first looks for the key's
 * result in memory (a replay), then runs its operation on stored copies only (`Speculating`):
 * when every copy it needs is there, the data is in hand before any credit moves, and the charge,
 * the receipt and the stored result commit in one statement (`HitCharges`), with no reservation
 * and no lease. `undefined` sends the call the full way: a copy missing, the run failing, or the
 * charge declined (not enough credits, a call in flight, an alert to send, the key already used),
 * since the full path answers each of those.
 */
// hot path
const chargeIfHit = <R>(
  call: Admitted<R>,
  callId: string,
  meter: Meter
): Effect.Effect<
  CallOutcome | undefined,
  ConcurrencyLimit | Unauthorized | Reauthenticate,
  AppConfig | IdempotencyStore | HitCharges | R
> => {
  const key = call.input.idempotencyKey
  // Anything but a charged hit (a replay, or the full way) confirms the caller first.
  const unlessCharged = (hit: CallOutcome | undefined) =>
    hit !== undefined && !hit.replayed ? Effect.succeed(hit) : Effect.as(confirmed(meter), hit)
  if (key === undefined) return unlessCharged(undefined)
  const { input, operation, caller } = call
  return Effect.flatMap(IdempotencyStore, ({ results: memory }) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const remembered = memory.replay(caller.account.id, key, now)
      if (remembered !== undefined)
        return unlessCharged(
          remembered.fingerprint === call.fingerprint
            ? replayFromMemory(memory, caller.account.id, key, remembered)
            : undefined
        )
      if (!operation.speculative || input.freshness !== "recent" || call.quoted <= 0)
        return unlessCharged(undefined)
      return Effect.flatMap(speculate(call, callId, key, now, meter), unlessCharged)
    })
  )
}

/** The cache hit itself: the run on stored copies, then the one-statement charge. */
// hot path
const speculate = <R>(
  call: Admitted<R>,
  callId: string,
  key: string,
  now: number,
  meter: Meter
): Effect.Effect<
  CallOutcome | undefined,
  ConcurrencyLimit | Unauthorized | Reauthenticate,
  AppConfig | HitCharges | IdempotencyStore | R
> => {
  const { input, operation, caller } = call
  // The charge checks an unconfirmed caller's versions, and so confirms it.
  const pending = meter.unconfirmed
  const speculation: Speculation = { afterCharge: [] }
  return Effect.flatMap(
    Effect.exit(
      operation
        .run(call.args, { freshness: input.freshness })
        .pipe(Effect.provideService(Speculating, speculation))
    ),
    (ran) => {
      if (Exit.isFailure(ran)) return Effect.succeed(undefined)
      const run = ran.value
      return Effect.flatMap(AppConfig, ({ maxResponseBytes }) => {
        const { charged, refunds } = settlement(call.quoted, refundsOf(run, input.freshness))
        const result = resultOf(operation, input.freshness, run, now)
        const stored = JSON.stringify(result)
        // The data is no longer than the whole result; a longer one is measured by the full path.
        if (stored.length > maxResponseBytes) return Effect.succeed(undefined)
        const charging = Effect.flatMap(HitCharges, (hits) =>
          hits.charge({
            callId,
            accountId: caller.account.id,
            keyId: caller.key.id,
            parentKeyId: caller.key.parentKeyId,
            ip: caller.ip,
            operation: operation.id,
            quoted: call.quoted,
            charged,
            refunds,
            idempotencyKey: key,
            fingerprint: call.fingerprint,
            result: stored,
            now,
            versions: pending?.versions
          })
        ).pipe(
          // The statement's fate unknown (a lost connection): the full path finds the key done if it committed.
          Effect.catchTag("SqlError", (error) =>
            Effect.as(
              Effect.logWarning("cache-hit charge failed; the call takes the full path", error),
              undefined
            )
          )
        )
        return Effect.flatMap(
          charging,
          (
            outcome
          ): Effect.Effect<
            CallOutcome | undefined,
            ConcurrencyLimit | Unauthorized | Reauthenticate,
            AppConfig | IdempotencyStore
          > => {
            if (outcome === undefined) return Effect.succeed(undefined)
            if (outcome._tag === "Declined") {
              if (outcome.reason === "pending") return Effect.fail(inFlight(call.who))
              if (outcome.reason === "identity" && pending !== undefined) {
                meter.unconfirmed = undefined
                return Effect.flatMap(pending.reread, (identity) => Effect.fail(new Reauthenticate(identity)))
              }
              return Effect.succeed(undefined)
            }
            meter.unconfirmed = undefined
            const writes = Effect.forEach(
              speculation.afterCharge,
              (write) =>
                write.pipe(
                  Effect.catchCause((cause) => Effect.logWarning("write after a charge failed", cause))
                ),
              { discard: true }
            )
            const envelope = envelopeOf(result, outcome.receipt)
            return Effect.as(Effect.andThen(writes, rememberResult(call, stored, outcome.receipt)), {
              envelope,
              receipt: outcome.receipt,
              replayed: false,
              // The data was serialised once, to store it: the answer's JSON is made from that text.
              json: envelopeJson(stored, outcome.receipt),
              remaining: outcome.remaining
            } satisfies CallOutcome)
          }
        )
      })
    }
  )
}

/** One call of the account's per-minute allowance; the caller gives it back if the call is turned away. */
// hot path
const takeRateToken = <R>(call: Admitted<R>, meter: Meter) =>
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
const peekRate = (account: Account): Effect.Effect<RateState, never, AppConfig | RateLimits> =>
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
 * Claims the Idempotency-Key (or finds its stored result), then reserves the quote. Each is
 * released, fenced by `callId`, if the call then fails: in reverse order, reservation first.
 */
const hold = Effect.fnUntraced(function* <R>(call: Admitted<R>, callId: string) {
  yield* Effect.acquireRelease(
    Effect.sync(() => callsHeld.count++),
    () => Effect.sync(() => callsHeld.count--)
  )
  const claim = yield* claimKey(call, callId)
  if (claim._tag === "Replay") return claim
  const { input, caller } = call
  const reservations = yield* Reservations
  const reservation = yield* Effect.acquireRelease(
    reservations
      .reserve({
        callId,
        accountId: caller.account.id,
        plan: caller.account.plan,
        keyId: caller.key.id,
        parentKeyId: caller.key.parentKeyId,
        claimed: caller.account.claimed,
        ip: caller.ip,
        operation: call.operation.id,
        quoted: call.quoted,
        realtime: input.freshness === "realtime",
        idempotencyKey: input.idempotencyKey
      })
      .pipe(Effect.catchTag("SqlError", Effect.die)),
    (reservation, exit) =>
      Exit.isSuccess(exit)
        ? Effect.void
        : reservations.release(reservation).pipe(
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
  const { account } = call.caller
  const key = call.input.idempotencyKey
  if (key === undefined) {
    if (!isPaid(account.plan)) return { _tag: "Claimed" } satisfies Claim
    return yield* new IdempotencyKeyRequired({
      message: `Paid keys must send an Idempotency-Key header (${idempotencyKeyLengthText}, a UUID is best) on metered calls.`,
      account: call.who
    })
  }
  const store = yield* IdempotencyStore
  const begun = yield* Effect.acquireRelease(
    Effect.orDie(store.begin(account.id, key, call.fingerprint, callId)),
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
      const receipt = receiptOf(begun.call)
      yield* rememberResult(call, begun.result, receipt)
      return { _tag: "Replay", outcome: replayOf(begun.result, receipt) } satisfies Claim
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
    case "Expired": {
      const { policy } = yield* AppConfig
      return yield* new NotFound({
        message: `The stored result of this Idempotency-Key has expired (results are kept ${windowWords(policy.replayWindowMs)}). Resend with a fresh Idempotency-Key.`,
        account: call.who
      })
    }
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
  const { input, operation } = call
  const { maxResponseBytes } = yield* AppConfig
  const reservations = yield* Reservations
  // While the upstream runs, the call beats (so a waiting caller knows it is alive), and stops as
  // soon as its reservation is found gone (its lease expired and it was refunded).
  const beating = reservations.heartbeat(callId).pipe(
    Effect.catchTag("SqlError", () => Effect.succeed(true)),
    Effect.delay(heartbeatMs),
    Effect.flatMap((alive) => (alive ? Effect.void : Effect.fail(new ReservationLost({ callId })))),
    Effect.forever
  )
  const run = yield* restore(
    Effect.raceFirst(operation.run(call.args, { freshness: input.freshness }), beating)
  )

  const size = JSON.stringify(run.data).length
  if (size > maxResponseBytes) {
    return yield* new PayloadTooLarge({
      message: `The response would be ${size} bytes, above the ${maxResponseBytes}-byte limit. Ask for less (fewer ids, sections or comments); nothing was charged.`,
      account: call.who
    })
  }

  const result = resultOf(operation, input.freshness, run, reservation.createdAt)
  const resultJson = JSON.stringify(result)
  const key = input.idempotencyKey
  const store = yield* IdempotencyStore
  const settled = yield* reservations
    .settle(reservation, refundsOf(run, input.freshness), () =>
      key === undefined ? Effect.void : store.complete(call.caller.account.id, key, callId, resultJson)
    )
    .pipe(Effect.catchTag("SqlError", Effect.die))
  yield* rememberResult(call, resultJson, settled.receipt)
  return {
    envelope: envelopeOf(result, settled.receipt),
    receipt: settled.receipt,
    replayed: false,
    json: envelopeJson(resultJson, settled.receipt),
    remaining: settled.remaining
  } satisfies CallOutcome
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

/**
 * The entitlement step: NOT_ENTITLED when the account may not call the platform, or the key is
 * limited to other platforms.
 */
const entitlement = (account: Account, key: KeyRecord, platform: Platform): NotEntitled | undefined => {
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
