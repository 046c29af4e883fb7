import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from "@x402/core/types"
import { Context, Data, Effect, Layer, Option, Redacted } from "effect"
import { AppConfig, type X402Config } from "../config.ts"

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
