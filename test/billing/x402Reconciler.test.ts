import { afterAll, assert, describe, layer } from "@effect/vitest"
import { toClientEvmSigner } from "@x402/evm"
import { ExactEvmScheme } from "@x402/evm/exact/client"
import { x402Client } from "@x402/fetch"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { createPublicClient, http } from "viem"
import { foundry } from "viem/chains"
import { AppConfig, type X402Config } from "../../src/config.ts"
import { expiryMarginMs, reconcileAfterMs, X402Reconciler } from "../../src/payments/X402Reconciler.ts"
import { encodeX402Header } from "../../src/payments/x402Wire.ts"
import { ipSequence } from "../support/accounts.ts"
import { appInstance, TestApp, testApp } from "../support/app.ts"
import {
  type Chain,
  chainAvailable,
  facilitatorPrivateKey,
  losingAnswers,
  network,
  payer,
  payTo,
  startChain,
  tokenName,
  tokenVersion
} from "../support/chain.ts"
import { freshDatabase, storeName } from "../support/database.ts"
import { scrapeMetrics, seriesValue } from "../support/metrics.ts"
import { testOperations } from "../support/testOperations.ts"

/**
 * The x402 reconciler on a local chain: a settlement whose answer was lost after it went on-chain
 * (as a crash between the settlement and the credit leaves it) is credited once by the reconciler,
 * however many sweeps race for it; one that never went on-chain is closed once its authorization
 * expired, nothing credited.
 */

const available = chainAvailable()
const chain: Chain | undefined = available ? await startChain() : undefined
afterAll(() => chain?.stop())

const x402Of = (token: string): X402Config => ({
  payTo,
  network,
  asset: token,
  assetName: tokenName,
  assetVersion: tokenVersion,
  atomicPerCredit: 2000,
  minCredits: 500,
  facilitator: {
    _tag: "InProcess",
    rpcUrl: chain?.rpcUrl ?? "",
    privateKey: Redacted.make(facilitatorPrivateKey)
  }
})

const freshIp = ipSequence("10.65")

/** A payment signed by `payer` for 500 credits, the service's 402 at `url` being what it pays. */
const signedPayment = (url: string, key: string) =>
  Effect.promise(async () => {
    const unpaid = await fetch(`${url}/v1/credits/x402`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ credits: 500 })
    })
    const required = JSON.parse(
      Buffer.from(unpaid.headers.get("payment-required") ?? "", "base64").toString("utf8")
    )
    const publicClient = createPublicClient({ chain: foundry, transport: http(chain?.rpcUrl) })
    const client = x402Client.fromConfig({
      schemes: [
        { network, client: new ExactEvmScheme(toClientEvmSigner(payer as never, publicClient as never)) }
      ],
      spendControls: { allowedAssets: [{ network, asset: chain?.token ?? "" }] }
    })
    return encodeX402Header(await client.createPaymentPayload(required))
  })

const buy = (url: string, key: string, signature: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/v1/credits/x402`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        "payment-signature": signature
      },
      body: JSON.stringify({ credits: 500 })
    })
    return { status: response.status, body: (await response.json()) as any }
  })

const ledgerOf = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const purchases = yield* sql<{
      credits: number | string
      payer: string
      network: string
      transaction_hash: string
      amount_atomic: string
    }>`SELECT credits, payer, network, transaction_hash, amount_atomic FROM purchases WHERE account_id = ${accountId}`
    const [account] = yield* sql<{
      balance_credits: number | string
    }>`SELECT balance_credits FROM accounts WHERE id = ${accountId}`
    const begun = yield* sql<{
      valid_before: number | string
    }>`SELECT valid_before FROM x402_settlements WHERE account_id = ${accountId}`
    return { purchases, balance: Number(account?.balance_credits), begun }
  }).pipe(Effect.orDie)

describe.skipIf(!available)(`x402 reconciler: a settlement on-chain, never credited (${storeName})`, () => {
  if (chain === undefined) return
  layer(
    testApp(
      testOperations,
      { x402: Option.some(x402Of(chain.token)) },
      undefined,
      losingAnswers("after broadcast")
    ),
    {
      timeout: 120_000,
      excludeTestServices: true
    }
  )((it) => {
    it.effect(
      "two sweeps racing credit it once, with its transaction; the payer paid once; the signature then credits nothing",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const reconciler = yield* X402Reconciler
          const { key, account_id } = yield* app.mint(freshIp())
          const signature = yield* signedPayment(app.url, key)
          const before = yield* Effect.promise(() => chain.balanceOf(payer.address))
          const lost = yield* buy(app.url, key, signature)
          assert.strictEqual(lost.status, 502, JSON.stringify(lost.body))
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before - 1_000_000n)
          const stranded = yield* ledgerOf(account_id)
          assert.strictEqual(stranded.purchases.length, 0)
          assert.strictEqual(stranded.begun.length, 1)

          // Too young: an attempt may still be settling it.
          const now = Date.now()
          const early = yield* reconciler.sweep(now)
          assert.strictEqual(early.credited, 0)
          assert.strictEqual((yield* ledgerOf(account_id)).begun.length, 1)

          const sweeps = yield* Effect.all(
            [reconciler.sweep(now + reconcileAfterMs), reconciler.sweep(now + reconcileAfterMs)],
            { concurrency: "unbounded" }
          )
          assert.strictEqual(sweeps[0]!.credited + sweeps[1]!.credited, 1, JSON.stringify(sweeps))
          assert.isAtLeast(
            seriesValue(yield* scrapeMetrics, 'svc_x402_settlements_total{outcome="reconciled"}'),
            1
          )
          const after = yield* ledgerOf(account_id)
          assert.strictEqual(after.purchases.length, 1)
          assert.strictEqual(after.balance, 500)
          assert.strictEqual(after.begun.length, 0)
          const row = after.purchases[0]!
          assert.strictEqual(Number(row.credits), 500)
          assert.strictEqual(row.payer, payer.address.toLowerCase())
          assert.strictEqual(row.network, network)
          assert.strictEqual(row.amount_atomic, "1000000")
          // The transaction credited is the one that moved the tokens.
          const transfers = yield* Effect.promise(() => chain.transfersFrom(payer.address))
          assert.deepInclude(transfers, { to: payTo, value: 1_000_000n, transaction: row.transaction_hash })

          // The client retrying the same signature gets no second credit, and nothing moves again.
          const again = yield* buy(app.url, key, signature)
          assert.strictEqual(again.status, 402, JSON.stringify(again.body))
          assert.strictEqual(again.body.reason, "authorization_already_used")
          assert.strictEqual((yield* reconciler.sweep(now + reconcileAfterMs)).credited, 0)
          assert.strictEqual((yield* ledgerOf(account_id)).purchases.length, 1)
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before - 1_000_000n)
        })
    )

    it.effect(
      "another account presenting the stranded authorization gets nothing; the account that began it is credited",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const reconciler = yield* X402Reconciler
          const owner = yield* app.mint(freshIp())
          const other = yield* app.mint(freshIp())
          const signature = yield* signedPayment(app.url, owner.key)
          assert.strictEqual((yield* buy(app.url, owner.key, signature)).status, 502)

          const foreign = yield* buy(app.url, other.key, signature)
          assert.strictEqual(foreign.status, 402, JSON.stringify(foreign.body))
          assert.strictEqual(foreign.body.reason, "authorization_already_used")
          assert.include(foreign.body.message, "another account")
          const credited = yield* ledgerOf(owner.account_id)
          assert.strictEqual(credited.purchases.length, 1)
          assert.strictEqual(credited.balance, 500)
          assert.strictEqual(credited.begun.length, 0)
          const nothing = yield* ledgerOf(other.account_id)
          assert.strictEqual(nothing.purchases.length, 0)
          assert.strictEqual(nothing.balance, 0)
          assert.strictEqual((yield* reconciler.sweep(Date.now() + reconcileAfterMs)).credited, 0)
        })
    )
  })
})

describe.skipIf(!available)(`x402 reconciler: a settlement that never went on-chain (${storeName})`, () => {
  if (chain === undefined) return
  layer(
    testApp(
      testOperations,
      { x402: Option.some(x402Of(chain.token)) },
      undefined,
      losingAnswers("before broadcast")
    ),
    {
      timeout: 120_000,
      excludeTestServices: true
    }
  )((it) => {
    it.effect(
      "left while its authorization is valid, closed once it expired; nothing credited, nothing moved",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const reconciler = yield* X402Reconciler
          const { key, account_id } = yield* app.mint(freshIp())
          const signature = yield* signedPayment(app.url, key)
          const before = yield* Effect.promise(() => chain.balanceOf(payer.address))
          const lost = yield* buy(app.url, key, signature)
          assert.strictEqual(lost.status, 502, JSON.stringify(lost.body))
          const stranded = yield* ledgerOf(account_id)
          assert.strictEqual(stranded.begun.length, 1)
          const validBefore = Number(stranded.begun[0]!.valid_before)
          assert.isAbove(validBefore * 1000, Date.now())

          const valid = yield* reconciler.sweep(validBefore * 1000 + expiryMarginMs - 1)
          assert.deepStrictEqual(valid, { credited: 0, closed: 0, left: 1 })
          assert.strictEqual((yield* ledgerOf(account_id)).begun.length, 1)

          const expired = yield* reconciler.sweep(validBefore * 1000 + expiryMarginMs)
          assert.deepStrictEqual(expired, { credited: 0, closed: 1, left: 0 })
          assert.strictEqual(
            seriesValue(yield* scrapeMetrics, 'svc_x402_settlements_total{outcome="expired"}'),
            1
          )
          const after = yield* ledgerOf(account_id)
          assert.strictEqual(after.begun.length, 0)
          assert.strictEqual(after.purchases.length, 0)
          assert.strictEqual(after.balance, 0)
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before)
        })
    )
  })
})

describe.skipIf(!available)(`x402 reconciler: two instances on one PostgreSQL (${storeName})`, () => {
  if (chain === undefined) return
  const overrides = { trustedProxies: ["127.0.0.1", "::1"], x402: Option.some(x402Of(chain.token)) }
  layer(freshDatabase.pipe(Layer.provideMerge(AppConfig.layerTest(overrides))), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect.runIf(storeName === "postgres")(
      "both reconcile the same settlement at once: one credit, one transfer (PostgreSQL only)",
      () =>
        Effect.gen(function* () {
          const a = yield* appInstance(testOperations, overrides, losingAnswers("after broadcast"))
          const b = yield* appInstance(testOperations, overrides, losingAnswers("after broadcast"))
          const { key, account_id } = yield* a.client.mint(freshIp())
          const signature = yield* signedPayment(a.client.url, key)
          const before = yield* Effect.promise(() => chain.balanceOf(payer.address))
          assert.strictEqual((yield* buy(b.client.url, key, signature)).status, 502)
          const later = Date.now() + reconcileAfterMs
          const sweeps = yield* Effect.all(
            [a, b, a, b].map((instance) => Context.get(instance.built, X402Reconciler).sweep(later)),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(
            sweeps.reduce((sum, sweep) => sum + sweep.credited, 0),
            1,
            JSON.stringify(sweeps)
          )
          const after = yield* ledgerOf(account_id)
          assert.strictEqual(after.purchases.length, 1)
          assert.strictEqual(after.balance, 500)
          assert.strictEqual(after.begun.length, 0)
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before - 1_000_000n)
        }).pipe(Effect.scoped)
    )
  })
})
