import { afterAll, assert, describe, layer } from "@effect/vitest"
import { toClientEvmSigner } from "@x402/evm"
import { ExactEvmScheme } from "@x402/evm/exact/client"
import { wrapFetchWithPayment, x402Client } from "@x402/fetch"
import { Effect, Option } from "effect"
import { createPublicClient, http } from "viem"
import { foundry } from "viem/chains"
import { post, signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import {
  type Chain,
  chainAvailable,
  network,
  payer,
  payTo,
  startChain,
  x402ConfigOf
} from "../support/chain.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { startReceiver, verified } from "../support/webhookReceiver.ts"
import { eventually } from "./support.ts"

/** An x402 purchase reaches the account's webhook as `credits.purchased`, naming the payer, the chain and the transfer. */

const available = chainAvailable()
const chain: Chain | undefined = available ? await startChain() : undefined
const receiver = await startReceiver()
afterAll(() => Promise.all([chain?.stop(), receiver.close()]))

describe.skipIf(!available)(`webhooks: credits.purchased for an x402 purchase (${storeName})`, () => {
  if (chain === undefined) return
  const x402 = x402ConfigOf(chain)
  layer(testApp(testOperations, { webhookAllowPrivateUrls: true, x402: Option.some(x402) }), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect("the delivered event carries rail x402, the payer, the network and the transaction", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.66.0.1"
        const minted = yield* app.mint(ip)
        const token = (yield* signIn(app, "x402-webhook@example.com", { key: minted.key, ip }))
          .management_token
        const hook = yield* post(
          app,
          "/v1/webhooks",
          { url: receiver.url("/x402"), events: ["credits.purchased"] },
          { key: token, ip }
        )
        assert.strictEqual(hook.status, 201, JSON.stringify(hook.body))

        const publicClient = createPublicClient({ chain: foundry, transport: http(chain.rpcUrl) })
        const client = x402Client.fromConfig({
          schemes: [
            { network, client: new ExactEvmScheme(toClientEvmSigner(payer as never, publicClient as never)) }
          ],
          spendControls: { allowedAssets: [{ network, asset: chain.token }] }
        })
        const paid = yield* Effect.promise(async () => {
          const response = await wrapFetchWithPayment(fetch, client)(`${app.url}/v1/credits/x402`, {
            method: "POST",
            headers: { authorization: `Bearer ${minted.key}`, "content-type": "application/json" },
            body: JSON.stringify({ credits: 500 })
          })
          return { status: response.status, body: (await response.json()) as any }
        })
        assert.strictEqual(paid.status, 200, JSON.stringify(paid.body))

        const [event] = yield* eventually(
          Effect.sync(() =>
            receiver.received
              .filter((request) => request.path === "/x402")
              .map((request) => verified(hook.body.secret as string, request))
              .filter((event) => event.type === "credits.purchased")
          ),
          (found) => found.length >= 1,
          "credits.purchased at /x402"
        )
        assert.deepInclude(event!.data, {
          pack: "flex",
          rail: "x402",
          credits: 500,
          price_usd_cents: 100,
          currency: "usd",
          payer: payer.address.toLowerCase(),
          network,
          transaction: paid.body.transaction
        })
        assert.match(event!.data.purchase_id, /^pur_/)
        // The transaction named is the transfer that paid.
        const transfers = yield* Effect.promise(() => chain.transfersFrom(payer.address))
        assert.deepInclude(transfers, { to: payTo, value: 1_000_000n, transaction: event!.data.transaction })
      })
    )
  })
})
