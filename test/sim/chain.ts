import { createHash } from "node:crypto"
import type { PaymentPayload, SettleResponse, VerifyResponse } from "@x402/core/types"
import { Effect, Layer } from "effect"
import type { X402Config } from "../../src/config.ts"
import { FacilitatorUnavailable, X402Facilitator } from "../../src/payments/X402Facilitator.ts"
import { encodeX402Header } from "../../src/payments/x402Wire.ts"

/**
 * The simulation's own chain for the x402 rail: token balances by address and the EIP-3009
 * authorizations it has used, all plain data drawn from the seed. The facilitator every instance
 * is given (`simFacilitator`) is the real service's port (`X402Facilitator`) answered from it, with
 * the faults a schedule sets: the facilitator down, or a settlement that goes through on the chain
 * while its answer is lost (a timeout after broadcasting) or its instance crashes before crediting.
 */
export interface SimChain {
  /** Token units each address holds. */
  readonly balances: Map<string, bigint>
  /**
   * Every authorization the chain used, by `from:nonce` (lower case), with its transaction and the
   * account the simulator sent it for (the chain does not know accounts: the reference model does).
   */
  readonly used: Map<
    string,
    { readonly transaction: string; readonly value: bigint; readonly account: string; readonly from: string }
  >
  /** The facilitator does not answer (verify, settle, usedBy). */
  down: boolean
  /** What the next settlement does after the chain used the authorization. */
  afterSettle: "answer" | "lose" | "hang"
  /** Set when a settlement went through and now hangs (the simulator crashes its instance). */
  hanging: boolean
  /** Transactions so far (each one's hash is drawn from its number). */
  transactions: number
  /** Which account each signed authorization was made for (the simulator's own bookkeeping). */
  readonly accountOf: Map<string, string>
}

export const makeChain = (): SimChain => ({
  balances: new Map(),
  used: new Map(),
  down: false,
  afterSettle: "answer",
  hanging: false,
  transactions: 0,
  accountOf: new Map()
})

/** The sim's x402 settings: a made-up chain, token and payee (six-decimal token, $0.002 a credit). */
export const simX402: X402Config = {
  payTo: "0x00000000000000000000000000000000000a11ce",
  network: "eip155:31337",
  asset: "0x0000000000000000000000000000000000070c3e",
  assetName: "Sim USD",
  assetVersion: "2",
  atomicPerCredit: 2000,
  minCredits: 500,
  facilitator: { _tag: "Remote", url: "http://facilitator.sim.invalid" }
}

const hex = (text: string, bytes: number) =>
  `0x${createHash("sha256")
    .update(text)
    .digest("hex")
    .repeat(2)
    .slice(0, bytes * 2)}`

/** A client's wallet address (client number, and whether it is the one without funds). */
export const walletOf = (client: number, poor = false) => hex(`wallet ${client}${poor ? " poor" : ""}`, 20)

/** The signature a wallet makes over an authorization: the sim's stand-in for EIP-712. */
const signatureOf = (a: { from: string; to: string; value: string; nonce: string }) =>
  hex(`signed by ${a.from}: ${a.to} ${a.value} ${a.nonce}`, 65)

const key = (from: string, nonce: string) => `${from.toLowerCase()}:${nonce.toLowerCase()}`

/**
 * A `PAYMENT-SIGNATURE` for `credits` from `from`, signed, with a fresh `nonce` (32 bytes hex),
 * made for `account`.
 */
export const paymentHeader = (
  chain: SimChain,
  input: { readonly from: string; readonly credits: number; readonly nonce: string; readonly account: string }
) => {
  const value = (BigInt(input.credits) * BigInt(simX402.atomicPerCredit)).toString()
  const authorization = {
    from: input.from,
    to: simX402.payTo,
    value,
    validAfter: "0",
    validBefore: "99999999999",
    nonce: input.nonce
  }
  chain.accountOf.set(key(input.from, input.nonce), input.account)
  return encodeX402Header({
    x402Version: 2,
    accepted: {
      scheme: "exact",
      network: simX402.network,
      amount: value,
      asset: simX402.asset,
      payTo: simX402.payTo,
      maxTimeoutSeconds: 300,
      extra: { name: simX402.assetName, version: simX402.assetVersion }
    },
    payload: { signature: signatureOf(authorization), authorization }
  })
}

/** A fresh authorization nonce from the run's randomness. */
export const nonceOf = (n: number, salt: string) => hex(`nonce ${salt} ${n}`, 32)

const unavailable = (what: string) =>
  Effect.fail(new FacilitatorUnavailable({ message: `${what}: the simulated facilitator is down` }))

/** Why the chain would refuse `payload` now, if it would. */
const refusal = (chain: SimChain, payload: PaymentPayload): string | undefined => {
  const authorization = (payload.payload as any).authorization as {
    from: string
    to: string
    value: string
    nonce: string
  }
  if ((payload.payload as any).signature !== signatureOf(authorization))
    return "invalid_exact_evm_payload_signature"
  if (authorization.to.toLowerCase() !== simX402.payTo.toLowerCase())
    return "invalid_exact_evm_payload_recipient_mismatch"
  if (chain.used.has(key(authorization.from, authorization.nonce)))
    return "invalid_exact_evm_nonce_already_used"
  if ((chain.balances.get(authorization.from.toLowerCase()) ?? 0n) < BigInt(authorization.value))
    return "insufficient_funds"
  return undefined
}

/**
 * The facilitator over the sim's chain, as the real service's port: verify reads it, settle moves
 * the tokens and uses the nonce (then answers, loses its answer, or hangs, as `afterSettle` says),
 * usedBy finds the transaction that used an authorization.
 */
export const simFacilitator = (chain: SimChain) =>
  Layer.succeed(
    X402Facilitator,
    X402Facilitator.of({
      verify: (payload) =>
        Effect.suspend((): Effect.Effect<VerifyResponse, FacilitatorUnavailable> => {
          if (chain.down) return unavailable("verify")
          const reason = refusal(chain, payload)
          const from = ((payload.payload as any).authorization.from as string).toLowerCase()
          return Effect.succeed(
            reason === undefined
              ? { isValid: true, payer: from }
              : {
                  isValid: false,
                  invalidReason: reason,
                  invalidMessage: `the chain refuses it (${reason})`,
                  payer: from
                }
          )
        }),
      settle: (payload) =>
        Effect.suspend((): Effect.Effect<SettleResponse, FacilitatorUnavailable> => {
          if (chain.down) return unavailable("settle")
          const authorization = (payload.payload as any).authorization as {
            from: string
            value: string
            nonce: string
          }
          const from = authorization.from.toLowerCase()
          const reason = refusal(chain, payload)
          if (reason !== undefined)
            return Effect.succeed({
              success: false,
              errorReason: reason,
              errorMessage: `the chain refuses it (${reason})`,
              transaction: "",
              network: simX402.network as `${string}:${string}`,
              payer: from
            })
          const value = BigInt(authorization.value)
          chain.transactions += 1
          const transaction = hex(`transaction ${chain.transactions}`, 32)
          chain.balances.set(from, (chain.balances.get(from) ?? 0n) - value)
          chain.balances.set(
            simX402.payTo.toLowerCase(),
            (chain.balances.get(simX402.payTo.toLowerCase()) ?? 0n) + value
          )
          const k = key(from, authorization.nonce)
          chain.used.set(k, { transaction, value, account: chain.accountOf.get(k) ?? "", from })
          const after = chain.afterSettle
          chain.afterSettle = "answer"
          if (after === "lose") return unavailable("settle (broadcast, the answer lost)")
          if (after === "hang")
            return Effect.andThen(
              Effect.sync(() => {
                chain.hanging = true
              }),
              Effect.never
            )
          return Effect.succeed({
            success: true,
            transaction,
            network: simX402.network as `${string}:${string}`,
            payer: from
          })
        }),
      usedBy: (authorization) =>
        Effect.suspend(() =>
          chain.down
            ? unavailable("usedBy")
            : Effect.succeed(chain.used.get(key(authorization.from, authorization.nonce))?.transaction)
        ),
      // The sim's chain is read whole: an authorization it has no use of was not used.
      readsChain: true
    })
  )
