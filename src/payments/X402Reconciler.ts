import { Clock, Context, type Duration, Effect, Layer, Option, Queue, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import { recordX402Settlement } from "../observability/metrics.ts"
import { pollLoop } from "../services/polling.ts"
import * as Row from "../store/rows.ts"
import { X402 } from "./X402.ts"
import { X402Facilitator } from "./X402Facilitator.ts"

/** A settlement younger than this may still be in its payment's hands (a settle waits for its receipt). */
export const reconcileAfterMs = 120_000
/** After its authorization's `validBefore`, a margin for the chain's clock against ours. */
export const expiryMarginMs = 600_000
/** A row begun before `valid_before` was kept (null): closed only after a day without its transfer. */
const legacyExpiryMs = 86_400_000
/** Settlements looked at per sweep, oldest first: the rest wait for the next. */
const perSweep = 100

const decodeBegun = Row.decoder(
  Schema.Struct({
    payment_ref: Schema.String,
    account_id: Schema.String,
    credits: Row.Int,
    created_at: Row.Int,
    network: Schema.NullOr(Schema.String),
    asset: Schema.NullOr(Schema.String),
    payer: Schema.NullOr(Schema.String),
    nonce: Schema.NullOr(Schema.String),
    amount_atomic: Schema.NullOr(Schema.String),
    valid_before: Row.NullableInt
  }),
  "x402_settlements"
)

/** What one sweep did. */
export interface X402Sweep {
  /** Settlements found on-chain and credited by this sweep. */
  readonly credited: number
  /** Settlements whose authorization expired without a transfer: closed, nothing credited. */
  readonly closed: number
  /** Settlements left for a later sweep (not yet expired, or the chain did not answer). */
  readonly left: number
}

/**
 * The x402 reconciler: finds the payments whose settlement began (their `x402_settlements` row)
 * and was never credited (a crash, a facilitator that answered too late), and asks the chain
 * whether the authorization was used. Used: the transfer is the purchase, credited once under the
 * same `payment_ref` as the payment itself would have (`X402.credit`), whichever instance or
 * attempt gets there first. Not used and expired (`validBefore` passed, with a margin): the token
 * refuses it from now on, so the row is closed and nothing is credited. A facilitator that cannot
 * read the chain (one over HTTP) cannot tell "not used" from "not known": nothing is closed then.
 */
export class X402Reconciler extends Context.Service<
  X402Reconciler,
  {
    /** Reconciles the settlements begun before `now - reconcileAfterMs`, at most `perSweep`, oldest first. */
    readonly sweep: (now: number) => Effect.Effect<X402Sweep, SqlError>
  }
>()("payments/X402Reconciler") {
  static readonly layer = Layer.effect(
    X402Reconciler,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const x402 = yield* X402
      const facilitator = yield* X402Facilitator
      const perCredit = Option.map(x402.config, (config) => BigInt(config.atomicPerCredit))

      const sweep = Effect.fn("X402Reconciler.sweep")(function* (now: number) {
        const rows = yield* sql`SELECT payment_ref, account_id, credits, created_at, network, asset, payer,
            nonce, amount_atomic, valid_before
          FROM x402_settlements WHERE created_at <= ${now - reconcileAfterMs}
          ORDER BY created_at, payment_ref LIMIT ${perSweep}`.pipe(Effect.flatMap(decodeBegun))
        let credited = 0
        let closed = 0
        for (const row of rows) {
          // `x402:<network>:<asset>:<payer>:<nonce>`: the network (CAIP-2) has a colon of its own.
          const parts = row.payment_ref.split(":")
          const network = row.network ?? parts.slice(1, -3).join(":")
          const asset = row.asset ?? parts.at(-3) ?? ""
          const payer = row.payer ?? parts.at(-2) ?? ""
          const nonce = row.nonce ?? parts.at(-1) ?? ""
          const transaction = yield* facilitator.usedBy({ asset, from: payer, nonce }).pipe(
            Effect.map((found) => ({ found })),
            Effect.catchTag("FacilitatorUnavailable", (failure) =>
              Effect.as(
                Effect.logWarning("x402 reconciler: the chain did not answer", failure.message),
                undefined
              )
            )
          )
          if (transaction === undefined) continue
          if (transaction.found !== undefined) {
            const amountAtomic =
              row.amount_atomic !== null
                ? BigInt(row.amount_atomic)
                : BigInt(row.credits) * Option.getOrElse(perCredit, () => 0n)
            const applied = yield* x402.credit({
              paymentRef: row.payment_ref,
              accountId: row.account_id,
              credits: row.credits,
              network,
              asset,
              payer,
              amountAtomic,
              transaction: transaction.found
            })
            if (applied) {
              credited++
              recordX402Settlement("reconciled")
              yield* Effect.logInfo("x402 settlement found on-chain and credited by the reconciler", {
                credits: row.credits,
                transaction: transaction.found
              })
            }
            continue
          }
          const expiresAt =
            row.valid_before === null
              ? row.created_at + legacyExpiryMs
              : row.valid_before * 1000 + expiryMarginMs
          if (!facilitator.readsChain || now < expiresAt) continue
          const deleted = yield* sql`DELETE FROM x402_settlements WHERE payment_ref = ${row.payment_ref}
            RETURNING payment_ref`
          if (deleted.length > 0) {
            closed++
            recordX402Settlement("expired")
            yield* Effect.logInfo("x402 settlement expired without a transfer: closed, nothing credited", {
              credits: row.credits
            })
          }
        }
        return { credited, closed, left: rows.length - credited - closed } satisfies X402Sweep
      })

      return X402Reconciler.of({ sweep })
    })
  )

  /**
   * The reconciler's loop, where the x402 rail is offered: a sweep every `every` (1 minute; a
   * settlement is looked at once it is `reconcileAfterMs` old), at once again while a sweep
   * credits or closes something.
   */
  static readonly worker = (options: { readonly every?: Duration.Input } = {}) =>
    Layer.effectDiscard(
      Effect.gen(function* () {
        const { x402 } = yield* AppConfig
        if (Option.isNone(x402)) return
        const reconciler = yield* X402Reconciler
        const never = yield* Queue.unbounded<unknown>()
        const every = options.every ?? "1 minute"
        yield* Effect.forkScoped(
          pollLoop({
            step: Clock.currentTimeMillis.pipe(
              Effect.flatMap(reconciler.sweep),
              Effect.map((done) => done.credited + done.closed > 0),
              Effect.catchCause((cause) =>
                Effect.as(
                  Effect.logWarning("x402 reconciler: the settlements could not be read", cause),
                  false
                )
              )
            ),
            wake: never,
            first: every,
            max: every
          })
        )
      })
    ).pipe(Layer.provideMerge(X402Reconciler.layer))
}
