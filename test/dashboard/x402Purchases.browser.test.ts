import { afterAll, assert, describe, layer } from "@effect/vitest"
import { toClientEvmSigner } from "@x402/evm"
import { ExactEvmScheme } from "@x402/evm/exact/client"
import { wrapFetchWithPayment, x402Client } from "@x402/fetch"
import { Effect, Option } from "effect"
import { createPublicClient, http } from "viem"
import { foundry } from "viem/chains"
import { signIn } from "../identity/support.ts"
import { lastStatus, mailReader, signInWithCode, skipReason, withBrowser } from "../pages/browser.ts"
import { TestApp, testApp } from "../support/app.ts"
import { type Chain, chainAvailable, network, payer, startChain, x402ConfigOf } from "../support/chain.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { checkPage, dashboard } from "./support.ts"

/** An x402 purchase on the dashboard's Billing page: its payer, network and transaction, in Chromium. */

const available = chainAvailable()
const chain: Chain | undefined = available ? await startChain() : undefined
afterAll(() => chain?.stop())

describe.skipIf(!available)(`/dashboard/billing lists x402 purchases in Chromium (${storeName})`, () => {
  if (chain === undefined) return
  const x402 = x402ConfigOf(chain)
  layer(testApp(testOperations, { x402: Option.some(x402) }), {
    timeout: 180_000,
    excludeTestServices: true
  })((it) => {
    it.effect(
      "the purchase's row names rail x402, the network, the payer and the transaction; passes axe",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const mail = yield* mailReader
          const ip = "10.95.0.1"
          const email = "dash-x402@example.com"
          const minted = yield* app.mint(ip)
          yield* signIn(app, email, { key: minted.key, ip: "10.95.0.2" })

          const publicClient = createPublicClient({ chain: foundry, transport: http(chain.rpcUrl) })
          const client = x402Client.fromConfig({
            schemes: [
              {
                network,
                client: new ExactEvmScheme(toClientEvmSigner(payer as never, publicClient as never))
              }
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
          const transaction: string = paid.body.transaction

          yield* withBrowser(app.url, { ip }, async (browser) => {
            const { page } = browser
            await page.goto(dashboard())
            await signInWithCode(page, mail, email)
            await page.getByRole("link", { name: "Billing" }).first().click()
            assert.strictEqual(lastStatus(browser, "GET", "/dashboard/billing"), 200)
            const rows = page.locator("section", { has: page.locator("#purchases") }).locator("tbody tr")
            assert.strictEqual(await rows.count(), 1)
            const row = (await rows.first().textContent()) ?? ""
            assert.include(row, "x402")
            assert.include(row, "500")
            assert.include(row, "$1.00")
            assert.include(row, network)
            assert.include(row, payer.address.toLowerCase())
            assert.include(row, transaction)
            await checkPage(page, "billing-x402-purchase")
          })
        })
    )
  })
})
