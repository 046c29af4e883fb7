/**
 * The storm's x402 side (`npm run storm -- --x402`): anvil with the test token (the chain of
 * test/support/chain.ts), every instance's own facilitator on it, and one agent buying credits
 * with x402 during the load, through the kills and stalls: each payment is signed once and sent
 * to instance after instance until one answers it paid or already credited, as an agent retries
 * with the same PAYMENT-SIGNATURE. Afterwards `x402StormCheck` holds the purchase rows against the
 * chain's transfers (x402Check.ts).
 */
import { setTimeout as sleep } from "node:timers/promises"
import { toClientEvmSigner } from "@x402/evm"
import { ExactEvmScheme } from "@x402/evm/exact/client"
import { x402Client } from "@x402/fetch"
import { createPublicClient, http, parseAbiItem } from "viem"
import { foundry } from "viem/chains"
import {
  type Chain,
  facilitatorPrivateKey,
  network,
  payer,
  payTo,
  startChain,
  tokenName,
  tokenVersion
} from "../../test/support/chain.ts"
import type { BenchAccount } from "../accounts.ts"
import type { PgSession } from "../pg.ts"
import type { StormCheck } from "./checks.ts"
import type { Instance } from "./cluster.ts"
import { readTransfers, readX402Rows, x402Problems } from "./x402Check.ts"

/** anvil and the token, and the settings that offer the rail on every instance. */
export const startX402Chain = async () => {
  // 1,000 tokens: a thousand payments of the 500-credit minimum ($1).
  const chain = await startChain(1_000_000_000n)
  const env: Record<string, string> = {
    PAYMENT_RAILS: "x402,local",
    X402_PAY_TO: payTo,
    X402_NETWORK: network,
    X402_ASSET: chain.token,
    X402_ASSET_NAME: tokenName,
    X402_ASSET_VERSION: tokenVersion,
    X402_RPC_URL: chain.rpcUrl,
    X402_FACILITATOR_PRIVATE_KEY: facilitatorPrivateKey
  }
  return { chain, env }
}

/** One payment as the agent saw it: every answer, in order. */
export interface X402Payment {
  readonly accountId: string
  readonly answers: Array<string>
  outcome: "paid" | "already credited" | "refused" | "unfinished"
  transaction?: string
}

const unfinishedPause = 500

/** The agent: a payment every `every` ms until `until`, each retried until `hardEnd`. */
export const x402Payer = (options: {
  readonly chain: Chain
  readonly instances: ReadonlyArray<Instance>
  readonly accounts: ReadonlyArray<BenchAccount>
  readonly random: () => number
  readonly every?: number
}) => {
  const payments: Array<X402Payment> = []
  const publicClient = createPublicClient({ chain: foundry, transport: http(options.chain.rpcUrl) })
  const client = x402Client.fromConfig({
    schemes: [
      { network, client: new ExactEvmScheme(toClientEvmSigner(payer as never, publicClient as never)) }
    ],
    spendControls: { allowedAssets: [{ network, asset: options.chain.token }] }
  })
  const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(options.random() * items.length)]!
  const ask = async (account: BenchAccount, signature: string | undefined) => {
    const instance = pick(options.instances)
    try {
      const response = await fetch(`${instance.url}/v1/credits/x402`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${account.key}`,
          "content-type": "application/json",
          "x-forwarded-for": account.ip,
          ...(signature === undefined ? {} : { "payment-signature": signature })
        },
        body: JSON.stringify({ credits: 500 }),
        signal: AbortSignal.timeout(20_000)
      })
      const body = (await response.json()) as { reason?: string; transaction?: string; code?: string }
      return { instance: instance.index, status: response.status, headers: response.headers, body }
    } catch (error) {
      return {
        instance: instance.index,
        status: 0,
        headers: new Headers(),
        body: { code: String(error).slice(0, 80) }
      }
    }
  }

  const payOnce = async (hardEnd: number) => {
    const account = pick(options.accounts)
    const payment: X402Payment = { accountId: account.accountId, answers: [], outcome: "unfinished" }
    payments.push(payment)
    let required: string | null = null
    while (required === null && Date.now() < hardEnd) {
      const offer = await ask(account, undefined)
      required = offer.headers.get("payment-required")
      if (required === null) await sleep(unfinishedPause)
    }
    if (required === null) return
    const signed = await client.createPaymentPayload(
      JSON.parse(Buffer.from(required, "base64").toString("utf8"))
    )
    const signature = Buffer.from(JSON.stringify(signed), "utf8").toString("base64")
    while (Date.now() < hardEnd) {
      const answer = await ask(account, signature)
      payment.answers.push(
        `i${answer.instance + 1} ${answer.status} ${answer.body.reason ?? answer.body.code ?? ""}`.trim()
      )
      if (answer.status === 200) {
        payment.outcome = "paid"
        if (answer.body.transaction !== undefined) payment.transaction = answer.body.transaction
        return
      }
      if (answer.status === 402 && answer.body.reason === "authorization_already_used") {
        payment.outcome = "already credited"
        return
      }
      if (answer.status === 402) {
        payment.outcome = "refused"
        return
      }
      await sleep(unfinishedPause)
    }
  }

  const run = async (until: number, hardEnd: number) => {
    while (Date.now() < until) {
      await payOnce(hardEnd)
      await sleep(options.every ?? 1500)
    }
  }
  return { payments, run }
}

/**
 * The settlements begun and not yet credited whose authorization the chain used: their transfers
 * are accounted for (the next attempt or the reconciler credits them), not lost.
 */
const pendingTransactions = async (db: PgSession, chain: Chain) => {
  const begun = await db.query<{ payer: string | null; nonce: string | null }>(
    "SELECT payer, nonce FROM x402_settlements"
  )
  const publicClient = createPublicClient({ chain: foundry, transport: http(chain.rpcUrl) })
  const used = parseAbiItem("event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)")
  const found = new Set<string>()
  for (const row of begun) {
    if (row.payer === null || row.nonce === null) continue
    const logs = await publicClient.getLogs({
      address: chain.token,
      event: used,
      args: { authorizer: row.payer as `0x${string}`, nonce: row.nonce as `0x${string}` },
      fromBlock: 0n,
      toBlock: "latest"
    })
    for (const log of logs) found.add(log.transactionHash.toLowerCase())
  }
  return { found, begun: begun.length }
}

/** The x402 invariant of the storm, with what the agent saw. */
export const x402StormCheck = async (
  db: PgSession,
  chain: Chain,
  payments: ReadonlyArray<X402Payment>
): Promise<StormCheck> => {
  const [rows, transfers, pending] = await Promise.all([
    readX402Rows(db),
    readTransfers(chain.rpcUrl, chain.token, payTo),
    pendingTransactions(db, chain)
  ])
  const problems = x402Problems(rows, transfers, pending.found)
  const count = (outcome: X402Payment["outcome"]) => payments.filter((p) => p.outcome === outcome).length
  return {
    group: "storm",
    name: "x402: every purchase row matches one on-chain transfer to payTo, and every such transfer its row",
    pass: problems.length === 0,
    detail: `${rows.length} x402 purchases, ${transfers.length} transfers to payTo, ${pending.begun} settlements begun and not credited (${pending.found.size} of them on-chain); the agent's ${payments.length} payments: ${count("paid")} paid, ${count("already credited")} already credited, ${count("refused")} refused, ${count("unfinished")} unfinished`,
    examples: [
      ...problems,
      ...payments
        .filter((payment) => payment.outcome === "unfinished" || payment.outcome === "refused")
        .map((payment) => `${payment.accountId} ${payment.outcome}: ${payment.answers.join(" | ")}`)
    ].slice(0, 5)
  }
}
