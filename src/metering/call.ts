import { Effect, type Result } from "effect"
import type { AppConfig } from "../config.ts"
import type { Caller } from "../contract/api.ts"
import type { Envelope } from "../contract/envelope.ts"
import type {
  ConcurrencyLimit,
  ErrorAccount,
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
  Unauthorized
} from "../contract/errors.ts"
import type { Plan } from "../domain/plans.ts"
import { Reauthenticate, type Unconfirmed } from "../identity/types.ts"
import type { AnyOperation, Freshness, RunError } from "../operations/Operation.ts"
import type { Ids } from "../services/Ids.ts"
import type { RateLimits } from "../services/RateLimits.ts"
import type { HitCharges } from "./HitCharges.ts"
import type { IdempotencyStore } from "./IdempotencyStore.ts"
import type { Remaining, Reservations, ReserveError } from "./Reservations.ts"
import type { Receipt } from "./receipt.ts"

/**
 * What every step of a data call shares: the call as the surface hands it over, as admission makes
 * it, and as its answer leaves; the problems it may answer and the services it runs on.
 */

/** Whom a data call runs as: the surface's caller, unconfirmed when it came from memory so. */
export type MeteredCaller = Caller["Service"] & { readonly unconfirmed?: Unconfirmed | undefined }

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
export interface Admitted<R> {
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
 * Everything but a charged cache hit acts on a confirmed caller: one taken from memory unconfirmed
 * is confirmed here, once. When it no longer holds the call starts again as the database has it
 * (`Reauthenticate`), or is refused as UNAUTHORIZED.
 */
// hot path
export const confirmed = (meter: Meter): Effect.Effect<void, Unauthorized | Reauthenticate> => {
  const pending = meter.unconfirmed
  if (pending === undefined) return Effect.void
  meter.unconfirmed = undefined
  return Effect.flatMap(pending.confirm, (fresh) =>
    fresh === undefined ? Effect.void : Effect.fail(new Reauthenticate(fresh))
  )
}

/**
 * What a call learns on its way: the rate limit as its token left it, which its answer reports, and
 * whether its caller is still to be confirmed.
 */
export interface Meter {
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

export type Restore = <A, E, R2>(effect: Effect.Effect<A, E, R2>) => Effect.Effect<A, E, R2>
