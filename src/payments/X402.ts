import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from "@x402/core/types"
import { Clock, Context, Data, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig, type X402Config } from "../config.ts"
import { InsufficientCredits, InvalidInput, UpstreamUnavailable } from "../contract/errors.ts"
import type { X402PaymentRequired } from "../contract/offer.ts"
import { x402MaxCredits } from "../domain/plans.ts"
import { recordX402Settlement } from "../observability/metrics.ts"
import { Credits } from "../services/Credits.ts"
import * as Row from "../store/rows.ts"
import {
  decodePaymentSignature,
  isUptoPayment,
  type X402ExactPayload,
  type X402UptoPayload
} from "./x402Wire.ts"

/** The facilitator could not be asked (down, timed out, the chain unreachable): nothing was settled by us. */
export class FacilitatorUnavailable extends Data.TaggedError("FacilitatorUnavailable")<{
  readonly message: string
}> {}

/**
 * Who verifies an x402 payment and settles it on its chain: the library's facilitator in process
 * (the EVM `exact` scheme with our own key, which pays the gas) or a facilitator over the
 * protocol's HTTP API. A port, so tests and the simulation can put a deterministic one in.
 */
export class X402Facilitator extends Context.Service<
  X402Facilitator,
  {
    readonly verify: (
      payload: PaymentPayload,
      requirements: PaymentRequirements
    ) => Effect.Effect<VerifyResponse, FacilitatorUnavailable>
    readonly settle: (
      payload: PaymentPayload,
      requirements: PaymentRequirements
    ) => Effect.Effect<SettleResponse, FacilitatorUnavailable>
    /**
     * The transaction that used an authorization on-chain, if one did: an EIP-3009 one (`exact`,
     * a 32-byte hex nonce) by its `AuthorizationUsed` event, a Permit2 one (`upto`, a decimal
     * nonce) by the upto proxy's settlement that spent its nonce. How a settlement whose answer was
     * lost (a crash, a timeout) is found again. Undefined also where the facilitator cannot read the
     * chain (one over HTTP): see `readsChain`.
     */
    readonly usedBy: (authorization: {
      readonly asset: string
      readonly from: string
      readonly nonce: string
    }) => Effect.Effect<string | undefined, FacilitatorUnavailable>
    /**
     * Whether `usedBy` reads the chain, so that its undefined means "not used": only then may an
     * expired settlement that never landed be closed.
     */
    readonly readsChain: boolean
    /**
     * The address that settles `upto` payments (the facilitator's own, which an upto authorization
     * names), when this facilitator settles them.
     */
    readonly uptoFacilitator?: string | undefined
  }
>()("payments/X402Facilitator") {
  /**
   * The configured facilitator. The library and viem are loaded only when the rail is offered; a
   * service without it has one that is never asked.
   */
  static readonly layer = Layer.effect(
    X402Facilitator,
    Effect.gen(function* () {
      const { x402 } = yield* AppConfig
      if (Option.isNone(x402))
        return X402Facilitator.of({
          verify: () => Effect.fail(new FacilitatorUnavailable({ message: "the x402 rail is not offered" })),
          settle: () => Effect.fail(new FacilitatorUnavailable({ message: "the x402 rail is not offered" })),
          usedBy: () => Effect.succeed(undefined),
          readsChain: false
        })
      const config = x402.value
      const { client, usedBy, address } = yield* config.facilitator._tag === "InProcess"
        ? inProcessFacilitator(config, config.facilitator)
        : Effect.promise(async () => {
            const { HTTPFacilitatorClient } = await import("@x402/core/http")
            // Always our URL: the library's default is a public facilitator.
            return {
              client: new HTTPFacilitatorClient({
                url: (config.facilitator as { url: string }).url,
                timeoutMs: 30_000
              }),
              usedBy: undefined,
              address: undefined
            }
          })
      const hide =
        config.facilitator._tag === "InProcess"
          ? (text: string) =>
              text.split((config.facilitator as { rpcUrl: string }).rpcUrl).join("<X402_RPC_URL>")
          : (text: string) => text
      const call = <A>(what: "verify" | "settle", run: () => Promise<A>) =>
        Effect.tryPromise({
          try: run,
          catch: (cause) =>
            new FacilitatorUnavailable({
              message: hide(`${what}: ${cause instanceof Error ? cause.message : String(cause)}`).slice(
                0,
                300
              )
            })
        })
      return X402Facilitator.of({
        verify: (payload, requirements) => call("verify", () => client.verify(payload, requirements)),
        settle: (payload, requirements) => call("settle", () => client.settle(payload, requirements)),
        usedBy: (authorization) =>
          usedBy === undefined ? Effect.succeed(undefined) : call("settle", () => usedBy(authorization)),
        readsChain: usedBy !== undefined,
        uptoFacilitator: config.upto === true ? address : undefined
      })
    })
  )
}

/**
 * The library's facilitator with the EVM `exact` scheme (and `upto`, where `X402_SCHEMES` names it),
 * signing with `X402_FACILITATOR_PRIVATE_KEY`.
 */
const inProcessFacilitator = (
  config: X402Config,
  facilitator: { readonly rpcUrl: string; readonly privateKey: Redacted.Redacted<string> }
) =>
  Effect.gen(function* () {
    const [
      { x402Facilitator },
      { ExactEvmScheme },
      { UptoEvmScheme },
      { toFacilitatorEvmSigner, x402UptoPermit2ProxyABI, x402UptoPermit2ProxyAddress, PERMIT2_ADDRESS },
      viem,
      { privateKeyToAccount }
    ] = yield* Effect.promise(() =>
      Promise.all([
        import("@x402/core/facilitator"),
        import("@x402/evm/exact/facilitator"),
        import("@x402/evm/upto/facilitator"),
        import("@x402/evm"),
        import("viem"),
        import("viem/accounts")
      ])
    )
    const key = Redacted.value(facilitator.privateKey)
    // The key's own text never reaches a message: viem's errors would quote it.
    const account = yield* Effect.try({
      try: () => privateKeyToAccount(key as `0x${string}`),
      catch: () => new Error("X402_FACILITATOR_PRIVATE_KEY is not a 32-byte private key in 0x-prefixed hex.")
    }).pipe(Effect.orDie)
    const chain = viem.defineChain({
      id: Number(config.network.slice("eip155:".length)),
      name: config.network,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [facilitator.rpcUrl] } }
    })
    const wallet = viem
      .createWalletClient({ account, chain, transport: viem.http(facilitator.rpcUrl, { retryCount: 1 }) })
      .extend(viem.publicActions)
    const signer = toFacilitatorEvmSigner({ ...(wallet as any), address: account.address })
    const authorizationUsed = viem.parseAbiItem(
      "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)"
    )
    const authorizationState = viem.parseAbi([
      "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)"
    ])
    const network = config.network as `${string}:${string}`
    const client = new x402Facilitator().register(network, new ExactEvmScheme(signer))
    if (config.upto === true) client.register(network, new UptoEvmScheme(signer))
    const nonceBitmap = viem.parseAbi([
      "function nonceBitmap(address owner, uint256 word) view returns (uint256)"
    ])
    const transfer = viem.parseAbiItem(
      "event Transfer(address indexed from, address indexed to, uint256 value)"
    )
    /**
     * A Permit2 nonce is spent by any Permit2 transfer of its owner's, ours or not: used, the
     * transaction is the upto proxy's settlement that names it among the owner's transfers to
     * `X402_PAY_TO`; none (spent elsewhere), ours never happened, and the reconciler closes it
     * once the authorization's deadline is past.
     */
    const permit2UsedBy = async (asset: `0x${string}`, owner: `0x${string}`, nonce: bigint) => {
      const word = await wallet.readContract({
        address: PERMIT2_ADDRESS,
        abi: nonceBitmap,
        functionName: "nonceBitmap",
        args: [owner, nonce >> 8n]
      })
      if (((word >> (nonce & 0xffn)) & 1n) === 0n) return undefined
      const latest = await wallet.getBlockNumber({ cacheTime: 0 })
      const transfersFrom = (fromBlock: bigint) =>
        wallet.getLogs({
          address: asset,
          event: transfer,
          args: { from: owner, to: config.payTo as `0x${string}` },
          fromBlock,
          toBlock: latest
        })
      const settles = async (logs: ReadonlyArray<{ readonly transactionHash: `0x${string}` | null }>) => {
        for (const log of logs.toReversed()) {
          if (log.transactionHash === null) continue
          const sent = await wallet.getTransaction({ hash: log.transactionHash })
          if (sent.to?.toLowerCase() !== x402UptoPermit2ProxyAddress.toLowerCase()) continue
          const decoded = viem.decodeFunctionData({ abi: x402UptoPermit2ProxyABI, data: sent.input })
          const permit = decoded.args?.[decoded.functionName === "settle" ? 0 : 1] as
            | { readonly nonce: bigint }
            | undefined
          if (permit?.nonce === nonce) return log.transactionHash
        }
        return undefined
      }
      return (
        (await settles(await transfersFrom(latest > 5000n ? latest - 5000n : 0n))) ??
        (latest > 5000n ? await settles(await transfersFrom(0n)) : undefined)
      )
    }
    return {
      client,
      address: account.address,
      usedBy: async (authorization: {
        readonly asset: string
        readonly from: string
        readonly nonce: string
      }) => {
        const asset = authorization.asset as `0x${string}`
        if (/^[0-9]{1,78}$/.test(authorization.nonce))
          return permit2UsedBy(asset, authorization.from as `0x${string}`, BigInt(authorization.nonce))
        const args = {
          authorizer: authorization.from as `0x${string}`,
          nonce: authorization.nonce as `0x${string}`
        }
        const logsFrom = (fromBlock: bigint, toBlock: bigint) =>
          wallet.getLogs({ address: asset, event: authorizationUsed, args, fromBlock, toBlock })
        // An authorization is valid for minutes (maxTimeoutSeconds): its use is usually among the
        // recent blocks. The block number uncached: viem's would miss the settlement just mined.
        const latest = await wallet.getBlockNumber({ cacheTime: 0 })
        const recent = await logsFrom(latest > 5000n ? latest - 5000n : 0n, latest)
        if (recent[0] !== undefined) return recent[0].transactionHash
        // Not there: the token's own state says whether it was used at all (a reconciler may look
        // hours later). Used, its transaction is searched in every block; a node that refuses so
        // wide a search is an error, never "not used".
        const used = await wallet.readContract({
          address: asset,
          abi: authorizationState,
          functionName: "authorizationState",
          args: [args.authorizer, args.nonce]
        })
        if (!used) return undefined
        const all = await logsFrom(0n, latest)
        if (all[0] === undefined)
          throw new Error("the authorization is used on-chain but its event was not found")
        return all[0].transactionHash
      }
    }
  })

/** The `exact` scheme's requirements: an EIP-3009 transfer of `amount` token units to `X402_PAY_TO`. */
const requirementsOf = (config: X402Config, amount: bigint): PaymentRequirements => ({
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
const uptoRequirementsOf = (
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
type ReadPayment =
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
const readExact = (
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
const readUpto = (
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
