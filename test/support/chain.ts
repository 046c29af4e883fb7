import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { createServer } from "node:net"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { PERMIT2_ADDRESS, toClientEvmSigner, x402UptoPermit2ProxyAddress } from "@x402/evm"
import { ExactEvmScheme } from "@x402/evm/exact/client"
import { UptoEvmScheme } from "@x402/evm/upto/client"
import { wrapFetchWithPayment, x402Client } from "@x402/fetch"
import { Effect, Layer, Redacted } from "effect"
import {
  type Account,
  type Address,
  createPublicClient,
  createWalletClient,
  type Hex,
  http,
  publicActions
} from "viem"
import { mnemonicToAccount } from "viem/accounts"
import { foundry } from "viem/chains"
import type { X402Config } from "../../src/config.ts"
import { FacilitatorUnavailable, X402Facilitator } from "../../src/payments/X402Facilitator.ts"

/**
 * A local EVM chain for the x402 tests: anvil (from the registry's `@foundry-rs/anvil` package) on
 * 127.0.0.1 at a free port, chain 31337, with our EIP-3009 token (test/support/contracts/Token.sol,
 * compiled with solc-js here) deployed and minted to a payer, Multicall3's `tryAggregate` at
 * Multicall3's address for the facilitator's failure diagnosis, and the `upto` scheme's Permit2
 * and settlement proxy (test/support/contracts/Permit2.sol) at their canonical addresses. Nothing
 * reaches past 127.0.0.1.
 */

const require = createRequire(import.meta.url)
const here = dirname(fileURLToPath(import.meta.url))

/** The anvil binary the registry package ships, or undefined when it is not installed here. */
export const anvilBinary = (): string | undefined => {
  try {
    const path = join(dirname(require.resolve("@foundry-rs/anvil-linux-amd64/package.json")), "bin", "anvil")
    return existsSync(path) ? path : undefined
  } catch {
    return undefined
  }
}

/**
 * Whether the chain tests run: without the anvil binary they are skipped locally with a message,
 * and under CI its absence fails the run (a check that silently does not run is no check).
 */
export const chainAvailable = (): boolean => {
  if (anvilBinary() !== undefined) return true
  if (process.env.CI !== undefined && process.env.CI !== "")
    throw new Error("CI is set but the anvil binary (@foundry-rs/anvil) is not installed: run npm ci")
  console.log("The anvil binary (@foundry-rs/anvil) is not installed: the x402 chain tests are skipped.")
  return false
}

/** anvil's well-known test mnemonic: account 0 deploys and is the facilitator, 1 pays, 2 receives. */
const mnemonic = "test test test test test test test test test test test junk"
export const deployer = mnemonicToAccount(mnemonic, { addressIndex: 0 })
export const payer = mnemonicToAccount(mnemonic, { addressIndex: 1 })
export const payTo = mnemonicToAccount(mnemonic, { addressIndex: 2 }).address
/** A second payer, minted nothing: a payer without the funds. */
export const poorPayer = mnemonicToAccount(mnemonic, { addressIndex: 3 })
/** The facilitator's key (anvil's account 0): a test key, published with anvil itself. */
export const facilitatorPrivateKey =
  `0x${Buffer.from(deployer.getHdKey().privateKey ?? new Uint8Array()).toString("hex")}` as Hex

export const multicall3Address: Address = "0xcA11bde05977b3631167028862bE2a173976CA11"
export const tokenName = "Test USD"
export const tokenVersion = "2"
export const network = "eip155:31337"

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

interface Compiled {
  readonly abi: ReadonlyArray<unknown>
  readonly bytecode: Hex
  readonly deployedBytecode: Hex
}

type ContractName = "Token" | "Multicall3" | "Permit2" | "UptoPermit2Proxy"
const sourceOf: Record<ContractName, string> = {
  Token: "Token.sol",
  Multicall3: "Token.sol",
  Permit2: "Permit2.sol",
  UptoPermit2Proxy: "Permit2.sol"
}

/** Token.sol and Permit2.sol compiled with solc-js (about 2 s), once per process. */
let compiled: Promise<Record<ContractName, Compiled>> | undefined
export const compileContracts = () => {
  compiled ??= Promise.resolve().then(() => {
    const solc = require("solc") as { compile: (input: string) => string }
    const source = (file: string) => ({ content: readFileSync(join(here, "contracts", file), "utf8") })
    const input = {
      language: "Solidity",
      sources: { "Token.sol": source("Token.sol"), "Permit2.sol": source("Permit2.sol") },
      settings: {
        optimizer: { enabled: true, runs: 200 },
        outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } }
      }
    }
    const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
      errors?: ReadonlyArray<{ severity: string; formattedMessage: string }>
      contracts: Record<
        string,
        Record<
          string,
          {
            abi: ReadonlyArray<unknown>
            evm: { bytecode: { object: string }; deployedBytecode: { object: string } }
          }
        >
      >
    }
    const errors = (output.errors ?? []).filter((error) => error.severity === "error")
    if (errors.length > 0) throw new Error(errors.map((error) => error.formattedMessage).join("\n"))
    const of = (name: ContractName): Compiled => {
      const contract = output.contracts[sourceOf[name]]?.[name]
      if (contract === undefined) throw new Error(`solc produced no ${name}`)
      return {
        abi: contract.abi,
        bytecode: `0x${contract.evm.bytecode.object}`,
        deployedBytecode: `0x${contract.evm.deployedBytecode.object}`
      }
    }
    return {
      Token: of("Token"),
      Multicall3: of("Multicall3"),
      Permit2: of("Permit2"),
      UptoPermit2Proxy: of("UptoPermit2Proxy")
    }
  })
  return compiled
}

export const tokenAbi = [
  {
    type: "function",
    name: "balanceOf",
    stateMutability: "view",
    inputs: [{ name: "account", type: "address" }],
    outputs: [{ type: "uint256" }]
  },
  {
    type: "function",
    name: "mint",
    stateMutability: "nonpayable",
    inputs: [
      { name: "to", type: "address" },
      { name: "value", type: "uint256" }
    ],
    outputs: []
  },
  {
    type: "function",
    name: "approve",
    stateMutability: "nonpayable",
    inputs: [
      { name: "spender", type: "address" },
      { name: "value", type: "uint256" }
    ],
    outputs: [{ type: "bool" }]
  },
  {
    type: "function",
    name: "authorizationState",
    stateMutability: "view",
    inputs: [
      { name: "authorizer", type: "address" },
      { name: "nonce", type: "bytes32" }
    ],
    outputs: [{ type: "bool" }]
  }
] as const

export interface Chain {
  readonly rpcUrl: string
  readonly token: Address
  readonly balanceOf: (address: Address) => Promise<bigint>
  readonly mint: (to: Address, value: bigint) => Promise<void>
  /** Every `Transfer` of the token from `from`, as the chain logged it. */
  readonly transfersFrom: (
    from: Address
  ) => Promise<ReadonlyArray<{ readonly to: Address; readonly value: bigint; readonly transaction: Hex }>>
  /** Stops answering (anvil paused with SIGSTOP) or answers again: a chain that is down. */
  readonly pause: () => void
  readonly resume: () => void
  readonly stop: () => Promise<void>
}

/**
 * The rail's settings for this chain, as the tests set them: our token at 2,000 units a credit, a
 * 500-credit minimum, paid to `payTo`, settled by the facilitator in process with its own key.
 */
export const x402ConfigOf = (chain: Chain): X402Config => ({
  payTo,
  network,
  asset: chain.token,
  assetName: tokenName,
  assetVersion: tokenVersion,
  atomicPerCredit: 2000,
  minCredits: 500,
  facilitator: { _tag: "InProcess", rpcUrl: chain.rpcUrl, privateKey: Redacted.make(facilitatorPrivateKey) }
})

/** Starts anvil, deploys the token and mints `initialBalance` to `payer`. */
export const startChain = async (initialBalance = 100_000_000n): Promise<Chain> => {
  const binary = anvilBinary()
  if (binary === undefined) throw new Error("The anvil binary (@foundry-rs/anvil) is not installed")
  const [contracts, port] = await Promise.all([compileContracts(), freePort()])
  const child: ChildProcess = spawn(
    binary,
    ["--host", "127.0.0.1", "--port", String(port), "--chain-id", "31337", "--silent"],
    { stdio: ["ignore", "ignore", "pipe"] }
  )
  let stderr = ""
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const rpcUrl = `http://127.0.0.1:${port}`
  const transport = http(rpcUrl, { retryCount: 0 })
  const publicClient = createPublicClient({ chain: foundry, transport })
  const wallet = createWalletClient({ chain: foundry, transport, account: deployer }).extend(publicActions)
  const deadline = performance.now() + 20_000
  for (;;) {
    try {
      await publicClient.getChainId()
      break
    } catch (error) {
      if (child.exitCode !== null || performance.now() > deadline)
        throw new Error(`anvil did not start on ${rpcUrl}: ${stderr || String(error)}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  const setCode = (address: Address, code: Hex) =>
    publicClient.request({ method: "anvil_setCode" as never, params: [address, code] as never })
  await setCode(multicall3Address, contracts.Multicall3.deployedBytecode)
  // The x402 `upto` scheme's two contracts, at the addresses the library signs for and calls.
  await setCode(PERMIT2_ADDRESS, contracts.Permit2.deployedBytecode)
  await setCode(x402UptoPermit2ProxyAddress, contracts.UptoPermit2Proxy.deployedBytecode)
  const deployHash = await wallet.deployContract({
    abi: contracts.Token.abi,
    bytecode: contracts.Token.bytecode,
    args: [tokenName, tokenVersion]
  })
  const receipt = await publicClient.waitForTransactionReceipt({ hash: deployHash })
  const token = receipt.contractAddress
  if (token === null || token === undefined) throw new Error("the token did not deploy")
  const mint = async (to: Address, value: bigint) => {
    const hash = await wallet.writeContract({
      address: token,
      abi: tokenAbi,
      functionName: "mint",
      args: [to, value]
    })
    await publicClient.waitForTransactionReceipt({ hash })
  }
  await mint(payer.address, initialBalance)
  const transferEvent = {
    type: "event",
    name: "Transfer",
    inputs: [
      { name: "from", type: "address", indexed: true },
      { name: "to", type: "address", indexed: true },
      { name: "value", type: "uint256", indexed: false }
    ]
  } as const
  return {
    rpcUrl,
    token,
    balanceOf: (address) =>
      publicClient.readContract({
        address: token,
        abi: tokenAbi,
        functionName: "balanceOf",
        args: [address]
      }),
    mint,
    transfersFrom: async (from) => {
      const logs = await publicClient.getLogs({
        address: token,
        event: transferEvent,
        args: { from },
        fromBlock: 0n,
        toBlock: "latest"
      })
      return logs.map((log) => ({
        to: log.args.to as Address,
        value: log.args.value as bigint,
        transaction: log.transactionHash as Hex
      }))
    },
    pause: () => {
      child.kill("SIGSTOP")
    },
    resume: () => {
      child.kill("SIGCONT")
    },
    stop: async () => {
      child.kill("SIGCONT")
      child.kill("SIGTERM")
      await exited
    }
  }
}

/** The configured facilitator, except that a settlement's answer is lost: after it went on-chain, or before. */
export const losingAnswers = (when: "after broadcast" | "before broadcast") =>
  Layer.effect(
    X402Facilitator,
    Effect.gen(function* () {
      const real = yield* X402Facilitator
      const lost = Effect.fail(new FacilitatorUnavailable({ message: "the answer was lost" }))
      return X402Facilitator.of({
        ...real,
        settle: (payload, requirements) =>
          when === "before broadcast" ? lost : Effect.flatMap(real.settle(payload, requirements), () => lost)
      })
    })
  ).pipe(Layer.provide(X402Facilitator.layer))

/**
 * `@x402/fetch` for `account` on `chain`, with the library's `exact` or `upto` scheme, allowed to
 * pay the test token; every request it sends is kept.
 */
export const payingFetch = (chain: Chain, account: Account, scheme: "exact" | "upto" = "exact") => {
  const sent: Array<Headers> = []
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init)
    sent.push(request.headers)
    return fetch(request)
  }
  const signer = toClientEvmSigner(
    account as never,
    createPublicClient({ chain: foundry, transport: http(chain.rpcUrl) }) as never
  )
  const client = x402Client.fromConfig({
    schemes: [
      { network, client: scheme === "exact" ? new ExactEvmScheme(signer) : new UptoEvmScheme(signer) }
    ],
    spendControls: { allowedAssets: [{ network, asset: chain.token }] }
  })
  return { pay: wrapFetchWithPayment(recording, client), sent }
}
