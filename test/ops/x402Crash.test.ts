import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { toClientEvmSigner } from "@x402/evm"
import { ExactEvmScheme } from "@x402/evm/exact/client"
import { x402Client } from "@x402/fetch"
import { Effect, Layer, Option, Redacted } from "effect"
import { createPublicClient, http } from "viem"
import { foundry } from "viem/chains"
import { afterAll, assert, describe, it } from "vitest"
import { AppConfig } from "../../src/config.ts"
import { reconcileAfterMs, X402Reconciler } from "../../src/payments/X402Reconciler.ts"
import { encodeX402Header } from "../../src/payments/x402Wire.ts"
import { servicesLayer } from "../../src/service.ts"
import * as Database from "../../src/store/Database.ts"
import {
  chainAvailable,
  facilitatorPrivateKey,
  network,
  payer,
  payTo,
  startChain,
  tokenName,
  tokenVersion,
  x402ConfigOf
} from "../support/chain.ts"
import { mintKey, queryStore, startService } from "./service.ts"

/**
 * The service process killed (SIGKILL) after its facilitator broadcast the settlement and before
 * the credit: the transfer lands after the process is gone. An instance started afterwards on the
 * same store credits it once through its reconciler, and the payer's retry of the same signature
 * credits nothing more.
 */

const store = process.env.TEST_DATABASE_URL === undefined ? "PGlite" : "PostgreSQL"
const cleanups: Array<() => unknown> = []
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const until = async (what: string, test: () => Promise<boolean>) => {
  for (let tries = 0; tries < 600; tries++) {
    if (await test()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`${what} did not happen in 30 s`)
}

const available = chainAvailable()

describe.skipIf(!available)(
  `x402: the process killed between the settlement and the credit (${store})`,
  () => {
    it("a restarted instance's reconciler credits the landed transfer once; the payer's retry credits nothing more", {
      timeout: 180_000
    }, async () => {
      const chain = await startChain()
      cleanups.push(() => chain.stop())
      const dir = mkdtempSync(join(tmpdir(), "svc-x402-crash-"))
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
      const env = {
        X402_PAY_TO: payTo,
        X402_NETWORK: network,
        X402_ASSET: chain.token,
        X402_ASSET_NAME: tokenName,
        X402_ASSET_VERSION: tokenVersion,
        X402_RPC_URL: chain.rpcUrl,
        X402_FACILITATOR_PRIVATE_KEY: facilitatorPrivateKey
      }
      const first = await startService(env, { dir })
      cleanups.push(first.stop)
      const { key, account } = await mintKey(first.base)
      const buy = (base: string, signature?: string) =>
        fetch(`${base}/v1/credits/x402`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${key}`,
            "content-type": "application/json",
            ...(signature === undefined ? {} : { "payment-signature": signature })
          },
          body: JSON.stringify({ credits: 500 })
        })
      const unpaid = await buy(first.base)
      assert.strictEqual(unpaid.status, 402)
      const required = JSON.parse(
        Buffer.from(unpaid.headers.get("payment-required") ?? "", "base64").toString("utf8")
      )
      const rpc = createPublicClient({ chain: foundry, transport: http(chain.rpcUrl) })
      const client = x402Client.fromConfig({
        schemes: [{ network, client: new ExactEvmScheme(toClientEvmSigner(payer as never, rpc as never)) }],
        spendControls: { allowedAssets: [{ network, asset: chain.token }] }
      })
      const signature = encodeX402Header(await client.createPaymentPayload(required))
      const before = await chain.balanceOf(payer.address)

      // No blocks for now: the settlement's transaction waits in the pool, the process waits for it.
      await rpc.request({ method: "evm_setAutomine" as never, params: [false] as never })
      const paying = buy(first.base, signature).then(
        (reply) => reply.status,
        () => "no answer"
      )
      await until("the settlement's broadcast", async () => {
        const status = (await rpc.request({ method: "txpool_status" as never })) as { pending: string }
        return Number(status.pending) > 0
      })
      first.child.kill("SIGKILL")
      assert.strictEqual((await first.exited).signal, "SIGKILL")
      assert.strictEqual(await paying, "no answer")
      await rpc.request({ method: "evm_mine" as never })
      await rpc.request({ method: "evm_setAutomine" as never, params: [true] as never })
      // The tokens moved; the store holds only the begun settlement.
      assert.strictEqual(await chain.balanceOf(payer.address), before - 1_000_000n)
      const purchasesOf = `SELECT credits, payer, network, transaction_hash FROM purchases WHERE account_id = '${account}'`
      assert.deepStrictEqual(await queryStore(dir, purchasesOf), [])
      assert.strictEqual(
        (await queryStore(dir, `SELECT payment_ref FROM x402_settlements WHERE account_id = '${account}'`))
          .length,
        1
      )

      // An instance started on the same store: its reconciler finds the transfer and credits it, once.
      const database = process.env.TEST_DATABASE_URL
      const config = AppConfig.layerTest({
        dataDir: dir,
        databaseUrl: database === undefined ? Option.none() : Option.some(Redacted.make(database)),
        x402: Option.some(x402ConfigOf(chain))
      })
      const sweeps = await Effect.runPromise(
        Effect.gen(function* () {
          const reconciler = yield* X402Reconciler
          const later = Date.now() + reconcileAfterMs
          return [yield* reconciler.sweep(later), yield* reconciler.sweep(later)]
        }).pipe(
          Effect.provide(
            X402Reconciler.layer.pipe(
              Layer.provideMerge(servicesLayer()),
              Layer.provideMerge(Database.layer),
              Layer.provide(config)
            )
          ),
          Effect.scoped
        )
      )
      assert.deepStrictEqual(sweeps, [
        { credited: 1, closed: 0, left: 0 },
        { credited: 0, closed: 0, left: 0 }
      ])
      const transfers = await chain.transfersFrom(payer.address)
      const credited = await queryStore(dir, purchasesOf)
      assert.strictEqual(credited.length, 1)
      assert.strictEqual(Number(credited[0]!.credits), 500)
      assert.strictEqual(credited[0]!.payer, payer.address.toLowerCase())
      assert.deepInclude(transfers, {
        to: payTo,
        value: 1_000_000n,
        transaction: credited[0]!.transaction_hash as never
      })

      // The service again, and the payer retrying its signature: already credited, nothing more moves.
      const second = await startService(env, { dir })
      cleanups.push(second.stop)
      const retried = await buy(second.base, signature)
      const body = (await retried.json()) as { reason?: string }
      assert.strictEqual(retried.status, 402, JSON.stringify(body))
      assert.strictEqual(body.reason, "authorization_already_used")
      second.child.kill("SIGTERM")
      await second.exited
      assert.strictEqual((await queryStore(dir, purchasesOf)).length, 1)
      assert.strictEqual(await chain.balanceOf(payer.address), before - 1_000_000n)
    })
  }
)
