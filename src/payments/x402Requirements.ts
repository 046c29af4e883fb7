import type { PaymentRequirements } from "@x402/core/types"
import type { X402Config } from "../config.ts"
import type { X402ExactPayload, X402UptoPayload } from "./x402Wire.ts"

/**
 * What our x402 requirements are, and a payment read against them before any facilitator is asked:
 * the `exact` scheme's EIP-3009 authorization and the `upto` scheme's Permit2 one.
 */

/** The `exact` scheme's requirements: an EIP-3009 transfer of `amount` token units to `X402_PAY_TO`. */
export const requirementsOf = (config: X402Config, amount: bigint): PaymentRequirements => ({
  scheme: "exact",
  network: config.network as `${string}:${string}`,
  amount: amount.toString(),
  asset: config.asset,
  payTo: config.payTo,
  maxTimeoutSeconds: 300,
  extra: { name: config.assetName, version: config.assetVersion }
})

/**
 * The `upto` scheme's requirements: a Permit2 authorization of at most `amount` token units to
 * `X402_PAY_TO`, which only `facilitatorAddress` may settle (for what the call lacks, at most that).
 */
export const uptoRequirementsOf = (
  config: X402Config,
  amount: bigint,
  facilitatorAddress: string
): PaymentRequirements => ({
  scheme: "upto",
  network: config.network as `${string}:${string}`,
  amount: amount.toString(),
  asset: config.asset,
  payTo: config.payTo,
  maxTimeoutSeconds: 300,
  extra: {
    facilitatorAddress,
    assetTransferMethod: "permit2",
    name: config.assetName,
    version: config.assetVersion
  }
})

/**
 * A payment read against our requirements before the facilitator is asked: what it buys (`wanted`
 * credits for `amount` token units), the authorization's payer and nonce (lower case), when the
 * chain stops taking it (`validBefore`, unix seconds), and the requirements to verify and settle it
 * with; or why it is malformed (INVALID_INPUT) or refused (INSUFFICIENT_CREDITS with the reason).
 */
export type ReadPayment =
  | { readonly _tag: "Malformed"; readonly message: string }
  | { readonly _tag: "Refused"; readonly reason: string; readonly message: string; readonly wanted: number }
  | {
      readonly _tag: "Read"
      readonly from: string
      readonly nonce: string
      readonly wanted: number
      readonly amount: bigint
      readonly validBefore: number | null
      readonly verifyWith: PaymentRequirements
      readonly settleWith: PaymentRequirements
    }

const unixSeconds = (text: string) =>
  /^[0-9]{1,30}$/.test(text) ? Math.min(Number(text), Number.MAX_SAFE_INTEGER) : null

/**
 * An `exact` payment: an EIP-3009 authorization whose value is what it buys, `credits` when the
 * purchase names them (the explicit purchase), else whatever whole number of credits it pays for
 * (the retry of a refused call, which was offered at least the shortfall), at least `X402_MIN_CREDITS`.
 */
export const readExact = (
  payment: X402ExactPayload,
  config: X402Config,
  credits: number | undefined
): ReadPayment => {
  const authorization = payment.payload.authorization
  if (!/^0x[0-9a-fA-F]{40}$/.test(authorization.from) || !/^0x[0-9a-fA-F]{64}$/.test(authorization.nonce))
    return {
      _tag: "Malformed",
      message:
        "PAYMENT-SIGNATURE's authorization needs a 20-byte `from` and a 32-byte `nonce` in 0x-prefixed hex."
    }
  const per = BigInt(config.atomicPerCredit)
  const value = /^[0-9]{1,78}$/.test(authorization.value) ? BigInt(authorization.value) : -1n
  const wanted = credits ?? (value >= 0n && value % per === 0n ? Number(value / per) : config.minCredits)
  const accepted = payment.accepted
  if (
    accepted.scheme !== "exact" ||
    accepted.network !== config.network ||
    accepted.asset.toLowerCase() !== config.asset.toLowerCase() ||
    accepted.payTo.toLowerCase() !== config.payTo.toLowerCase() ||
    authorization.to.toLowerCase() !== config.payTo.toLowerCase()
  )
    return {
      _tag: "Refused",
      reason: "requirements_mismatch",
      message: `it must pay ${config.payTo} in ${config.asset} on ${config.network} with the exact scheme, as PAYMENT-REQUIRED says.`,
      wanted
    }
  if (value < 0n || value % per !== 0n || (credits !== undefined && value !== BigInt(credits) * per))
    return {
      _tag: "Refused",
      reason: "invalid_amount",
      message:
        credits === undefined
          ? `it must pay a whole number of credits at ${config.atomicPerCredit} units each.`
          : `${credits} credits cost ${BigInt(credits) * per} units, the authorization pays ${authorization.value}.`,
      wanted
    }
  if (wanted < config.minCredits)
    return {
      _tag: "Refused",
      reason: "invalid_amount",
      message: `a payment buys at least ${config.minCredits} credits (${BigInt(config.minCredits) * per} units).`,
      wanted
    }
  const requirements = requirementsOf(config, value)
  return {
    _tag: "Read",
    from: authorization.from.toLowerCase(),
    nonce: authorization.nonce.toLowerCase(),
    wanted,
    amount: value,
    // The token refuses the authorization after `validBefore`: after it, a settlement that did not
    // land never will, and the reconciler closes it.
    validBefore: unixSeconds(authorization.validBefore),
    verifyWith: requirements,
    settleWith: requirements
  }
}

/**
 * An `upto` payment, taken only inline in a data call where the service offered it
 * (`facilitatorAddress`, ours): it buys exactly `credits`, what the call lacks, settled out of an
 * authorization of at most the call's `max_credits`; no `X402_MIN_CREDITS` applies.
 */
export const readUpto = (
  payment: X402UptoPayload,
  config: X402Config,
  credits: number | undefined,
  facilitatorAddress: string | undefined
): ReadPayment => {
  const authorization = payment.payload.permit2Authorization
  if (
    !/^0x[0-9a-fA-F]{40}$/.test(authorization.from) ||
    !/^[0-9]{1,78}$/.test(authorization.nonce) ||
    !/^[0-9]{1,78}$/.test(authorization.permitted.amount)
  )
    return {
      _tag: "Malformed",
      message:
        "PAYMENT-SIGNATURE's Permit2 authorization needs a 20-byte `from` in 0x-prefixed hex, and a decimal `nonce` and `permitted.amount`."
    }
  const per = BigInt(config.atomicPerCredit)
  const most = BigInt(authorization.permitted.amount)
  const wanted = credits ?? 0
  const accepted = payment.accepted
  if (
    facilitatorAddress === undefined ||
    credits === undefined ||
    accepted.scheme !== "upto" ||
    accepted.network !== config.network ||
    accepted.asset.toLowerCase() !== config.asset.toLowerCase() ||
    accepted.payTo.toLowerCase() !== config.payTo.toLowerCase() ||
    authorization.permitted.token.toLowerCase() !== config.asset.toLowerCase() ||
    authorization.witness.to.toLowerCase() !== config.payTo.toLowerCase()
  )
    return {
      _tag: "Refused",
      reason: "requirements_mismatch",
      message:
        facilitatorAddress === undefined || credits === undefined
          ? "an upto authorization pays only for a data call refused INSUFFICIENT_CREDITS, where PAYMENT-REQUIRED offers the upto scheme; pay with the exact scheme here."
          : `it must pay ${config.payTo} in ${config.asset} on ${config.network}, as PAYMENT-REQUIRED's upto requirements say.`,
      wanted
    }
  const amount = BigInt(credits) * per
  if (amount > most)
    return {
      _tag: "Refused",
      reason: "invalid_amount",
      message: `the call lacks ${credits} credits (${amount} units); the authorization allows at most ${most}.`,
      wanted
    }
  return {
    _tag: "Read",
    from: authorization.from.toLowerCase(),
    nonce: BigInt(authorization.nonce).toString(),
    wanted,
    amount,
    // Permit2 refuses the authorization after its deadline.
    validBefore: unixSeconds(authorization.deadline),
    verifyWith: uptoRequirementsOf(config, most, facilitatorAddress),
    settleWith: uptoRequirementsOf(config, amount, facilitatorAddress)
  }
}
