import { Data, Effect } from "effect"
import type { LocalAccount } from "viem"
import type { X402PaymentRequired } from "../../contract/offer.ts"

/**
 * How the SDK pays with x402 (protocol v2, the EIP-3009 `exact` scheme): the payer's account and
 * the two bounds every payment is checked against before anything is signed.
 */
export interface X402PayerOptions {
  /** The payer (a viem `LocalAccount`, e.g. `privateKeyToAccount(...)`): it signs, it never sends a transaction. */
  readonly account: LocalAccount
  /** The most credits one payment may buy: a call's inline payment or one `buyCredits`. */
  readonly maxCredits: number
  /**
   * The most this client pays in all, in the asset's token units (its smallest unit: 1,000,000 is
   * one USDC). Every authorization it signs counts, settled or not.
   */
  readonly spendLimit: bigint
}

/** A payment the SDK refused to make: nothing was signed, nothing paid. */
export class X402PaymentRefused extends Data.TaggedError("X402PaymentRefused")<{
  readonly message: string
  /** `max_credits`: more credits than one payment may buy; `spend_limit`: over what this client may still pay; `no_payer`: the client has no x402 account. */
  readonly limit: "max_credits" | "spend_limit" | "no_payer"
  /** What the payment would cost, in token units (absent when refused before it was quoted). */
  readonly amount?: bigint | undefined
  /** What the spend limit has left, in token units. */
  readonly remaining?: bigint | undefined
}> {}

/** Signing failed (the account refused, or the service's payment is of a kind the client cannot sign). */
export class X402SigningFailed extends Data.TaggedError("X402SigningFailed")<{
  readonly message: string
  readonly cause: unknown
}> {}

/** The payment a problem offers: `PAYMENT-REQUIRED`'s object, on the error or in its offer. */
export const paymentRequiredOf = (error: unknown): X402PaymentRequired | undefined => {
  if (
    typeof error !== "object" ||
    error === null ||
    (error as { _tag?: unknown })._tag !== "InsufficientCredits"
  )
    return undefined
  const { x402, offer } = error as { x402?: X402PaymentRequired; offer?: { x402?: X402PaymentRequired } }
  return x402 ?? offer?.x402
}

/** The one requirement the SDK pays: the first `exact` payment on an EVM network. */
const exactOf = (required: X402PaymentRequired) =>
  required.accepts.find((accept) => accept.scheme === "exact" && accept.network.startsWith("eip155:"))

/** Signs `required` with the library's client; the x402 and viem code loads only when a payment is made. */
const sign = (account: LocalAccount, required: X402PaymentRequired) =>
  Effect.tryPromise({
    try: async () => {
      const [{ x402Client }, { encodePaymentSignatureHeader }, { toClientEvmSigner }, { ExactEvmScheme }] =
        await Promise.all([
          import("@x402/core/client"),
          import("@x402/core/http"),
          import("@x402/evm"),
          import("@x402/evm/exact/client")
        ])
      const network = required.accepts[0]!.network as `${string}:${string}`
      // The library's own spend controls (its default assets, $1 a payment) give way to ours,
      // checked before this: `maxCredits` and `spendLimit`.
      const client = x402Client.fromConfig({
        schemes: [{ network, client: new ExactEvmScheme(toClientEvmSigner(account)) }],
        spendControls: false
      })
      return encodePaymentSignatureHeader(await client.createPaymentPayload(required as never))
    },
    catch: (cause) =>
      new X402SigningFailed({ message: `The x402 payment could not be signed: ${String(cause)}`, cause })
  })

export interface X402Payer {
  readonly options: X402PayerOptions
  /** The `PAYMENT-SIGNATURE` for `required`, once it is within both bounds (and counted against the limit). */
  readonly pay: <E>(
    required: X402PaymentRequired,
    ceiling: Effect.Effect<bigint, E>
  ) => Effect.Effect<string, X402PaymentRefused | X402SigningFailed | E>
  /** Token units paid so far through this client. */
  readonly spent: () => bigint
}

/**
 * A payer for one client. `ceiling` (given per payment, evaluated once) is what the service asks
 * for `maxCredits` credits, in the same token units as its payments: a payment above it buys more
 * than `maxCredits`.
 */
export const makeX402Payer = (options: X402PayerOptions): X402Payer => {
  let spent = 0n
  let ceiling: bigint | undefined
  const refuse = (limit: "max_credits" | "spend_limit", amount: bigint, message: string) =>
    Effect.fail(new X402PaymentRefused({ message, limit, amount, remaining: options.spendLimit - spent }))
  return {
    options,
    spent: () => spent,
    pay: (required, quoteCeiling) =>
      Effect.gen(function* () {
        const accepted = exactOf(required)
        if (accepted === undefined)
          return yield* new X402SigningFailed({
            message: "The service asked for no x402 payment this client can make (the EVM `exact` scheme).",
            cause: required.accepts
          })
        const amount = BigInt(accepted.amount)
        ceiling ??= yield* quoteCeiling
        if (amount > ceiling)
          return yield* refuse(
            "max_credits",
            amount,
            `The x402 payment of ${amount} token units buys more than maxCredits (${options.maxCredits} credits, ${ceiling} units): nothing was paid.`
          )
        if (spent + amount > options.spendLimit)
          return yield* refuse(
            "spend_limit",
            amount,
            `The x402 payment of ${amount} token units is over this client's spend limit (${options.spendLimit - spent} of ${options.spendLimit} left): nothing was paid.`
          )
        // Counted before it is signed: an authorization may settle even when its answer is lost.
        spent += amount
        return yield* sign(options.account, { ...required, accepts: [accepted] }).pipe(
          Effect.tapError(() =>
            Effect.sync(() => {
              spent -= amount
            })
          )
        )
      })
  }
}
