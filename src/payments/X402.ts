import type { PaymentPayload, SettleResponse } from "@x402/core/types"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig, type X402Config } from "../config.ts"
import { InsufficientCredits, InvalidInput, UpstreamUnavailable } from "../contract/errors.ts"
import type { X402PaymentRequired } from "../contract/offer.ts"
import { x402MaxCredits } from "../domain/plans.ts"
import { recordX402Settlement } from "../observability/metrics.ts"
import { Credits } from "../services/Credits.ts"
import * as Row from "../store/rows.ts"
import { type FacilitatorUnavailable, X402Facilitator } from "./X402Facilitator.ts"
import { readExact, readUpto, requirementsOf, uptoRequirementsOf } from "./x402Requirements.ts"
import { decodePaymentSignature, isUptoPayment } from "./x402Wire.ts"

/** What a settled payment bought. */
export interface X402Paid {
  readonly purchaseId: string
  readonly credits: number
  readonly payer: string
  readonly network: string
  readonly transaction: string
  /** x402's `PAYMENT-RESPONSE` header, base64 JSON of the settlement. */
  readonly paymentResponse: SettleResponse
}

/** Why an authorization was refused before the facilitator was asked. */
const refusedHere = (reason: string, message: string, credits: number, available: number) =>
  new InsufficientCredits({
    message: `The x402 payment was refused (${reason}): ${message} Nothing was credited or charged.`,
    credits_required: credits,
    credits_available: available,
    reason
  })

/** The same refusal carrying `x402` (`offer.x402` and `PAYMENT-REQUIRED`). */
export const withPayment = (failure: InsufficientCredits, x402: X402PaymentRequired | undefined) =>
  new InsufficientCredits({
    message: failure.message,
    account: failure.account,
    doc_url: failure.doc_url,
    upgrade_url: failure.upgrade_url,
    offer: failure.offer,
    credits_required: failure.credits_required,
    credits_available: failure.credits_available,
    limit: failure.limit,
    cap_resets_at: failure.cap_resets_at,
    reason: failure.reason,
    x402
  })

/** An x402 payment to credit once under `paymentRef`: settled by `transaction`, from `payer`. */
export interface X402Credit {
  readonly paymentRef: string
  readonly accountId: string
  readonly credits: number
  readonly network: string
  /** The token, lower case. */
  readonly asset: string
  readonly payer: string
  /** What the authorization paid, in the token's units. */
  readonly amountAtomic: bigint
  readonly transaction: string
}

const decodeAccount = Row.decoder(
  Schema.Struct({ balance_credits: Row.Int, grant_credits: Row.Int, plan: Schema.String }),
  "accounts (x402)"
)

/**
 * The x402 rail: the payment an agent makes for credits, inline in the retry of a call refused
 * INSUFFICIENT_CREDITS or at `POST /v1/credits/x402`. A payment is verified, settled on-chain by
 * the facilitator, then credited once under its authorization's nonce (`Credits.applyPurchase`),
 * so one authorization never credits twice, whatever retries, instances or restarts report it.
 */
export class X402 extends Context.Service<
  X402,
  {
    /** The rail's settings, when it is offered. */
    readonly config: Option.Option<X402Config>
    /**
     * x402's `PaymentRequired` for `credits` (at least `X402_MIN_CREDITS`) at `resource`, when the
     * rail is offered; with `upto` (a data call's), also the upto scheme's authorization of at most
     * `maxCredits` credits, where `X402_SCHEMES` offers it.
     */
    readonly required: (
      credits: number,
      resource: string,
      upto?: { readonly maxCredits: number }
    ) => X402PaymentRequired | undefined
    /**
     * Verifies, settles and credits the payment of a `PAYMENT-SIGNATURE` header to `accountId`.
     * `credits`: what the payment must buy (the explicit purchase; the shortfall of a call paid
     * with `upto`); undefined, what its exact authorization pays for (the retry of a refused call,
     * which was offered at least the shortfall). `upto`: the caller offered the upto scheme.
     */
    readonly pay: (input: {
      readonly accountId: string
      readonly header: string
      readonly credits: number | undefined
      readonly upto?: boolean
    }) => Effect.Effect<X402Paid, InvalidInput | InsufficientCredits | UpstreamUnavailable | SqlError>
    /**
     * A call's INSUFFICIENT_CREDITS with the x402 payment that buys what it lacks (max(shortfall,
     * `X402_MIN_CREDITS`) credits at `resource`), where the rail is offered; a key cap's, which
     * paying does not lift, as it is. `call`: a data call's, whose `max_credits` the upto scheme
     * authorizes (where offered).
     */
    readonly offerOn: (
      failure: InsufficientCredits,
      resource: string,
      call?: { readonly maxCredits: number | undefined }
    ) => InsufficientCredits
    /**
     * Credits a settled payment once (its purchase row is unique on `paymentRef`) and forgets its
     * begun settlement; false when it was credited before. The payment and the reconciler both
     * credit through it.
     */
    readonly credit: (payment: X402Credit) => Effect.Effect<boolean, SqlError>
    /** The account's balance and plan, as the explicit purchase answers them. */
    readonly standing: (
      accountId: string
    ) => Effect.Effect<
      { readonly balanceCredits: number; readonly spendable: number; readonly plan: string },
      SqlError
    >
  }
>()("payments/X402") {
  static readonly layer = Layer.effect(
    X402,
    Effect.gen(function* () {
      const { x402: offered } = yield* AppConfig
      const facilitator = yield* X402Facilitator
      const credits = yield* Credits
      const sql = yield* SqlClient.SqlClient

      const required = (
        wanted: number,
        resource: string,
        upto?: { readonly maxCredits: number }
      ): X402PaymentRequired | undefined => {
        if (Option.isNone(offered)) return undefined
        const config = offered.value
        const count = Math.max(wanted, config.minCredits)
        const per = BigInt(config.atomicPerCredit)
        const settler = facilitator.uptoFacilitator
        return {
          x402Version: 2,
          resource: {
            url: resource,
            description: `${count} credits of this service`,
            mimeType: "application/json"
          },
          accepts: [
            requirementsOf(config, BigInt(count) * per),
            ...(upto === undefined || settler === undefined
              ? []
              : [
                  uptoRequirementsOf(config, BigInt(Math.min(upto.maxCredits, x402MaxCredits)) * per, settler)
                ])
          ]
        }
      }

      const standing = (accountId: string) =>
        sql`SELECT balance_credits, grant_credits, plan FROM accounts WHERE id = ${accountId}`.pipe(
          Effect.flatMap(decodeAccount),
          Effect.map((rows) => {
            const row = rows[0]
            return {
              balanceCredits: row?.balance_credits ?? 0,
              spendable: (row?.balance_credits ?? 0) + (row?.grant_credits ?? 0),
              plan: row?.plan ?? "trial"
            }
          })
        )

      const credit = (payment: X402Credit) =>
        Effect.andThen(
          credits.applyPurchase({
            accountId: payment.accountId,
            pack: {
              pack: "flex",
              mode: "one_time",
              // The purchase's exact price is `amount_atomic`; this is it in whole US cents for a
              // 6-decimal USD token (rounded down), as the other rails' rows show theirs.
              price_usd_cents: Number(payment.amountAtomic / 10_000n),
              credits: payment.credits
            },
            rail: "x402",
            paymentRef: payment.paymentRef,
            onChain: {
              payer: payment.payer,
              network: payment.network,
              asset: payment.asset,
              amountAtomic: payment.amountAtomic.toString(),
              transaction: payment.transaction
            }
          }),
          (applied: boolean) =>
            Effect.as(sql`DELETE FROM x402_settlements WHERE payment_ref = ${payment.paymentRef}`, applied)
        )

      const pay = Effect.fn("X402.pay")(function* (input: {
        readonly accountId: string
        readonly header: string
        readonly credits: number | undefined
        readonly upto?: boolean
      }) {
        if (Option.isNone(offered))
          return yield* new InvalidInput({
            message: "This service does not take x402 payments; see the offer's rails.",
            param: "PAYMENT-SIGNATURE"
          })
        const config = offered.value
        const payment = decodePaymentSignature(input.header)
        if (payment === undefined)
          return yield* new InvalidInput({
            message:
              "PAYMENT-SIGNATURE is not an x402 v2 payment (base64 JSON with x402Version 2, accepted, and an EIP-3009 or a Permit2 authorization).",
            param: "PAYMENT-SIGNATURE"
          })
        const available = (yield* standing(input.accountId)).spendable
        const refuse = (reason: string, message: string, wanted: number) => {
          recordX402Settlement("refused")
          return Effect.fail(refusedHere(reason, message, wanted, available))
        }
        const read = isUptoPayment(payment)
          ? readUpto(
              payment,
              config,
              input.credits,
              input.upto === true ? facilitator.uptoFacilitator : undefined
            )
          : readExact(payment, config, input.credits)
        if (read._tag === "Malformed")
          return yield* new InvalidInput({ message: read.message, param: "PAYMENT-SIGNATURE" })
        if (read._tag === "Refused") return yield* refuse(read.reason, read.message, read.wanted)
        const { from, wanted, amount, validBefore, verifyWith, settleWith } = read
        if (wanted > x402MaxCredits)
          return yield* refuse("invalid_amount", `a payment buys at most ${x402MaxCredits} credits.`, wanted)
        const nonce = read.nonce
        // The nonce tells the schemes apart: EIP-3009's is 32 bytes of hex, Permit2's a decimal.
        const paymentRef = `x402:${config.network}:${config.asset.toLowerCase()}:${from}:${nonce}`
        const already = yield* sql<{
          readonly id: string
        }>`SELECT id FROM purchases WHERE payment_ref = ${paymentRef}`
        if (already.length > 0) {
          recordX402Settlement("replayed")
          return yield* Effect.fail(
            refusedHere(
              "authorization_already_used",
              "this authorization was already credited.",
              wanted,
              available
            )
          )
        }
        const libraryPayload = payment as unknown as PaymentPayload
        const unavailable = (failure: FacilitatorUnavailable) =>
          Effect.andThen(
            Effect.logWarning("x402 facilitator unavailable", failure.message),
            Effect.suspend(() => {
              recordX402Settlement("unavailable")
              return Effect.fail(
                new UpstreamUnavailable({
                  message:
                    "The x402 facilitator or its chain did not answer; nothing was credited or charged. Retry with the same PAYMENT-SIGNATURE in a minute.",
                  retry_after_seconds: 60
                })
              )
            })
          )
        const creditThis = (transaction: string, network: string, payer: string) =>
          credit({
            paymentRef,
            accountId: input.accountId,
            credits: wanted,
            network,
            asset: config.asset.toLowerCase(),
            payer,
            amountAtomic: amount,
            transaction
          })
        const alreadyCredited = () => {
          // Another request with the same authorization credited it first.
          recordX402Settlement("replayed")
          return Effect.fail(
            refusedHere(
              "authorization_already_used",
              "this authorization was already credited.",
              wanted,
              available
            )
          )
        }
        // A settlement begun before and never credited (a crash, a facilitator that timed out after
        // broadcasting): if the chain used the authorization, that transfer is this purchase.
        const now = yield* Clock.currentTimeMillis
        const begun = yield* sql<{ readonly payment_ref: string }>`INSERT INTO x402_settlements
            (payment_ref, account_id, credits, created_at, network, asset, payer, nonce, amount_atomic,
              valid_before)
          VALUES (${paymentRef}, ${input.accountId}, ${wanted}, ${now}, ${config.network},
            ${config.asset.toLowerCase()}, ${from}, ${nonce}, ${amount.toString()},
            ${validBefore})
          ON CONFLICT (payment_ref) DO NOTHING RETURNING payment_ref`
        if (begun.length === 0) {
          // Begun by an earlier attempt, for its account: another account presenting the same
          // authorization gets nothing from it (the reconciler credits the account that began it).
          const [owner] = yield* sql<{
            readonly account_id: string
            readonly credits: number | string
          }>`SELECT account_id, credits FROM x402_settlements WHERE payment_ref = ${paymentRef}`
          const transaction = yield* facilitator
            .usedBy({ asset: config.asset, from, nonce })
            .pipe(Effect.catchTag("FacilitatorUnavailable", unavailable))
          if (owner !== undefined && owner.account_id !== input.accountId) {
            if (transaction !== undefined)
              yield* credit({
                paymentRef,
                accountId: owner.account_id,
                credits: Number(owner.credits),
                network: config.network,
                asset: config.asset.toLowerCase(),
                payer: from,
                amountAtomic: amount,
                transaction
              })
            recordX402Settlement("replayed")
            return yield* Effect.fail(
              refusedHere(
                "authorization_already_used",
                "this authorization is being settled for another account.",
                wanted,
                available
              )
            )
          }
          if (transaction !== undefined) {
            const payer = from
            if (!(yield* creditThis(transaction, config.network, payer))) return yield* alreadyCredited()
            recordX402Settlement("settled")
            const [row] = yield* sql<{
              readonly id: string
            }>`SELECT id FROM purchases WHERE payment_ref = ${paymentRef}`
            yield* Effect.logInfo("x402 payment found settled and credited", { credits: wanted, transaction })
            return {
              purchaseId: row?.id ?? "",
              credits: wanted,
              payer,
              network: config.network,
              transaction,
              paymentResponse: {
                success: true,
                transaction,
                network: config.network as `${string}:${string}`,
                payer
              }
            } satisfies X402Paid
          }
        }
        // Only the attempt that began the settlement forgets it: another one's may be on its way.
        const forget: Effect.Effect<void, SqlError> =
          begun.length > 0
            ? Effect.asVoid(sql`DELETE FROM x402_settlements WHERE payment_ref = ${paymentRef}`)
            : Effect.void
        const verified = yield* facilitator
          .verify(libraryPayload, verifyWith)
          .pipe(
            Effect.catchTag("FacilitatorUnavailable", (failure) =>
              Effect.andThen(forget, unavailable(failure))
            )
          )
        if (!verified.isValid) {
          yield* forget
          return yield* refuse(
            verified.invalidReason ?? "invalid_payment",
            `${verified.invalidMessage ?? "the facilitator found the authorization invalid"}.`,
            wanted
          )
        }
        // A settle that fails to answer may have broadcast: the row stays for the next attempt.
        const settled = yield* facilitator
          .settle(libraryPayload, settleWith)
          .pipe(Effect.catchTag("FacilitatorUnavailable", unavailable))
        if (!settled.success) {
          yield* forget
          return yield* refuse(
            settled.errorReason ?? "settlement_failed",
            `${settled.errorMessage ?? "the settlement did not go through"}.`,
            wanted
          )
        }
        const payer = (settled.payer ?? verified.payer ?? from).toLowerCase()
        if (!(yield* creditThis(settled.transaction, settled.network ?? config.network, payer)))
          return yield* alreadyCredited()
        recordX402Settlement("settled")
        const [row] = yield* sql<{
          readonly id: string
        }>`SELECT id FROM purchases WHERE payment_ref = ${paymentRef}`
        yield* Effect.logInfo("x402 payment credited", { credits: wanted, transaction: settled.transaction })
        return {
          purchaseId: row?.id ?? "",
          credits: wanted,
          payer,
          network: settled.network ?? config.network,
          transaction: settled.transaction,
          paymentResponse: settled
        } satisfies X402Paid
      })

      const offerOn = (
        failure: InsufficientCredits,
        resource: string,
        call?: { readonly maxCredits: number | undefined }
      ) => {
        if (Option.isNone(offered) || failure.limit === "key_cap" || failure.x402 !== undefined)
          return failure
        const shortfall = failure.credits_required - failure.credits_available
        return withPayment(
          failure,
          required(
            shortfall,
            resource,
            // upto authorizes the call's max_credits (its quote without one) and settles the shortfall.
            call === undefined
              ? undefined
              : { maxCredits: Math.max(call.maxCredits ?? failure.credits_required, shortfall) }
          )
        )
      }

      return X402.of({ config: offered, required, pay, offerOn, credit, standing })
    })
  )
}
