/**
 * x402 on a local chain, by hand (docs/x402.md, linked from the README's "Agents pay with x402"):
 *
 *   npm run x402:local -- chain                 # anvil + the test token; prints the service's X402_* settings
 *   npm run x402:local -- pay BASE KEY CREDITS  # pays POST BASE/v1/credits/x402 with @x402/fetch
 *   npm run x402:local -- call BASE KEY PATH    # a data call that pays inline when credits run out
 *
 * `pay` and `call` read X402_RPC_URL and X402_ASSET from the environment `chain` printed. Everything
 * stays on 127.0.0.1: the keys are anvil's published test keys.
 */
import { toClientEvmSigner } from "@x402/evm"
import { ExactEvmScheme } from "@x402/evm/exact/client"
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from "@x402/fetch"
import { createPublicClient, http } from "viem"
import { foundry } from "viem/chains"
import { facilitatorPrivateKey, network, payer, payTo, startChain, tokenName, tokenVersion } from "./chain.ts"

const [command, ...rest] = process.argv.slice(2)

const payingFetch = () => {
  const rpcUrl = process.env.X402_RPC_URL
  const asset = process.env.X402_ASSET
  if (rpcUrl === undefined || asset === undefined)
    throw new Error("Set X402_RPC_URL and X402_ASSET as `chain` printed them.")
  const publicClient = createPublicClient({ chain: foundry, transport: http(rpcUrl) })
  const client = x402Client.fromConfig({
    schemes: [
      { network, client: new ExactEvmScheme(toClientEvmSigner(payer as never, publicClient as never)) }
    ],
    spendControls: { allowedAssets: [{ network, asset }] }
  })
  return wrapFetchWithPayment(fetch, client)
}

const show = async (response: Response) => {
  const header = response.headers.get("payment-response")
  console.log(response.status, await response.text())
  if (header !== null) console.log("PAYMENT-RESPONSE", decodePaymentResponseHeader(header))
}

if (command === "chain") {
  const chain = await startChain()
  console.log(`anvil on ${chain.rpcUrl}, token ${chain.token}; the payer ${payer.address} holds 100 tokens.`)
  console.log("Start the service with:\n")
  console.log(
    [
      `X402_PAY_TO=${payTo}`,
      `X402_NETWORK=${network}`,
      `X402_ASSET=${chain.token}`,
      `X402_ASSET_NAME='${tokenName}'`,
      `X402_ASSET_VERSION=${tokenVersion}`,
      `X402_RPC_URL=${chain.rpcUrl}`,
      `X402_FACILITATOR_PRIVATE_KEY=${facilitatorPrivateKey}`
    ].join(" \\\n  ") + " \\\n  npm start\n"
  )
  console.log("Ctrl-C stops the chain.")
  process.on("SIGINT", () => void chain.stop().then(() => process.exit(0)))
} else if (command === "pay" && rest.length === 3) {
  const [base, key, credits] = rest as [string, string, string]
  await show(
    await payingFetch()(`${base}/v1/credits/x402`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ credits: Number(credits) })
    })
  )
} else if (command === "call" && rest.length === 3) {
  const [base, key, path] = rest as [string, string, string]
  await show(
    await payingFetch()(`${base}${path}`, {
      headers: { authorization: `Bearer ${key}`, "idempotency-key": crypto.randomUUID() }
    })
  )
} else {
  console.error("usage: npm run x402:local -- chain | pay BASE KEY CREDITS | call BASE KEY PATH")
  process.exit(2)
}
