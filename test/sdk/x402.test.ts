import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { LocalAccount } from "viem"
import { createClient, SvcClient, X402PaymentRefused } from "../../src/clients/sdk/index.ts"
import { operations } from "../../src/operations/registry.ts"
import { sampleArguments } from "../mcp/samples.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { type Chain, chainAvailable, payer, payTo, startChain, x402ConfigOf } from "../support/chain.ts"
import { startProxy } from "./proxy.ts"

/**
 * The SDK paying with x402 on a local chain (anvil, our EIP-3009 token, the facilitator in
 * process): inline in the retry of a refused call and with `buyCredits`, bound by `maxCredits` and
 * the client's spend limit. Token balances are read on-chain.
 */

const available = chainAvailable()
const chain: Chain | undefined = available ? await startChain() : undefined
afterAll(() => chain?.stop())

const freshIp = ipSequence("10.76")
/** 500 credits (the rail's minimum) at 2,000 units a credit. */
const price = 1_000_000n

const sdk = <A, E, R>(
  key: string,
  x402: { readonly maxCredits: number; readonly spendLimit: bigint },
  use: (client: SvcClient["Service"]) => Effect.Effect<A, E, R>,
  via?: string
) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const client = SvcClient.layer({
      baseUrl: via ?? app.url,
      key,
      retry: { baseDelayMs: 5, maxDelayMs: 2_000 },
      x402: { account: payer as LocalAccount, ...x402 }
    })
    return yield* Effect.flatMap(SvcClient, use).pipe(Effect.provide(client))
  })

const rowsOf = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const purchases = yield* sql<{
      transaction_hash: string
      amount_atomic: string
    }>`SELECT transaction_hash, amount_atomic FROM purchases WHERE account_id = ${accountId} AND rail = 'x402'`
    const [account] = yield* sql<{
      balance_credits: number | string
    }>`SELECT balance_credits FROM accounts WHERE id = ${accountId}`
    const receipts = yield* sql<{
      charged: number | string
    }>`SELECT charged FROM calls WHERE account_id = ${accountId} AND state = 'settled'`
    return {
      purchases,
      balance: Number(account?.balance_credits),
      receipts: receipts.map((r) => Number(r.charged))
    }
  }).pipe(Effect.orDie)

const balances = (current: Chain) =>
  Effect.promise(async () => ({
    payer: await current.balanceOf(payer.address),
    payTo: await current.balanceOf(payTo)
  }))

describe.skipIf(!available)("the SDK pays with x402 on a local chain", () => {
  if (chain === undefined) return
  const x402 = x402ConfigOf(chain)
  layer(testApp(operations, { x402: Option.some(x402) }), { timeout: 120_000, excludeTestServices: true })(
    (it) => {
      it.effect(
        "inline: a call refused INSUFFICIENT_CREDITS is paid and sent again, charged once; the spend limit refuses the next payment",
        () =>
          Effect.gen(function* () {
            const app = yield* TestApp
            const proxy = yield* startProxy(app.url)
            const { key, account_id } = yield* paidKey(freshIp(), 0)
            const before = yield* balances(chain)
            const query = { identifier: sampleArguments.getProfile!.identifier as string }
            yield* sdk(
              key,
              { maxCredits: 500, spendLimit: 1_500_000n },
              (client) =>
                Effect.gen(function* () {
                  const envelope = yield* client.getProfile({ query })
                  const charged = envelope.cost.charged
                  assert.isAbove(charged, 0)
                  assert.strictEqual(envelope.usage.credits_charged, charged)
                  assert.strictEqual(envelope.usage.credits_remaining, 500 - charged)
                  // Refused, the price of maxCredits asked once, then the same call with the same key, paid.
                  assert.deepStrictEqual(
                    proxy.seen.map((seen) => seen.path.split("?")[0]),
                    ["/v1/profnet/profiles", "/v1/credits/x402", "/v1/profnet/profiles"]
                  )
                  assert.isString(proxy.seen[0]!.idempotencyKey)
                  assert.strictEqual(proxy.seen[2]!.idempotencyKey, proxy.seen[0]!.idempotencyKey)

                  // On-chain: exactly the price moved, once; our rows: one purchase, one charge.
                  const after = yield* balances(chain)
                  assert.strictEqual(after.payer, before.payer - price)
                  assert.strictEqual(after.payTo, before.payTo + price)
                  const rows = yield* rowsOf(account_id)
                  assert.strictEqual(rows.purchases.length, 1)
                  assert.strictEqual(rows.purchases[0]!.amount_atomic, String(price))
                  const transfers = yield* Effect.promise(() => chain.transfersFrom(payer.address))
                  assert.deepInclude(transfers, {
                    to: payTo,
                    value: price,
                    transaction: rows.purchases[0]!.transaction_hash
                  })
                  assert.deepStrictEqual(rows.receipts, [charged])
                  assert.strictEqual(rows.balance, 500 - charged)

                  // A second payment (1,000,000 more) would pass the 1,500,000 limit: refused here, nothing signed.
                  const refused = yield* Effect.flip(client.buyCredits(500))
                  assert.instanceOf(refused, X402PaymentRefused)
                  if (refused instanceof X402PaymentRefused) {
                    assert.strictEqual(refused.limit, "spend_limit")
                    assert.strictEqual(refused.amount, price)
                    assert.strictEqual(refused.remaining, 500_000n)
                  }
                  assert.deepStrictEqual(yield* balances(chain), after)
                  assert.strictEqual((yield* rowsOf(account_id)).purchases.length, 1)
                  // Its price asked (unpaid, a 402), then refused here: no fifth request, no payment.
                  assert.deepStrictEqual(
                    proxy.seen.slice(3).map((seen) => seen.path),
                    ["/v1/credits/x402"]
                  )
                }),
              proxy.url
            )
          })
      )

      it.effect(
        "buyCredits (the Promise client): 402, paid, credited once; over maxCredits it is refused before any request",
        () =>
          Effect.gen(function* () {
            const app = yield* TestApp
            const { key, account_id } = yield* app.mint(freshIp())
            const before = yield* balances(chain)
            const client = createClient({
              baseUrl: app.url,
              key,
              // Above the most one payment may buy (1,000,000,000 credits): that maximum bounds it.
              x402: { account: payer as LocalAccount, maxCredits: 2_000_000_000, spendLimit: 10_000_000n }
            })
            const over = yield* Effect.promise(() =>
              client.buyCredits(2_000_000_001).catch((error: unknown) => error)
            )
            assert.instanceOf(over, X402PaymentRefused)
            if (over instanceof X402PaymentRefused) assert.strictEqual(over.limit, "max_credits")

            const purchase = yield* Effect.promise(() => client.buyCredits(500))
            assert.strictEqual(purchase.credits_added, 500)
            assert.strictEqual(purchase.balance_credits, 500)
            assert.strictEqual(purchase.plan, "flex")
            const after = yield* balances(chain)
            assert.strictEqual(after.payer, before.payer - price)
            assert.strictEqual(after.payTo, before.payTo + price)
            const rows = yield* rowsOf(account_id)
            assert.deepStrictEqual(rows.purchases, [
              { transaction_hash: purchase.transaction, amount_atomic: String(price) }
            ])
            assert.strictEqual(rows.balance, 500)
          })
      )

      it.effect(
        "a maxCredits below the rail's minimum pays nothing inline: X402PaymentRefused, nothing moved",
        () =>
          Effect.gen(function* () {
            const { key, account_id } = yield* paidKey(freshIp(), 0)
            const before = yield* balances(chain)
            const query = { identifier: sampleArguments.getProfile!.identifier as string }
            const refused = yield* sdk(key, { maxCredits: 100, spendLimit: 10_000_000n }, (client) =>
              Effect.flip(client.getProfile({ query }))
            )
            assert.instanceOf(refused, X402PaymentRefused)
            if (refused instanceof X402PaymentRefused) {
              assert.strictEqual(refused.limit, "max_credits")
              assert.strictEqual(refused.amount, price)
            }
            assert.deepStrictEqual(yield* balances(chain), before)
            const rows = yield* rowsOf(account_id)
            assert.deepStrictEqual(rows.purchases, [])
            assert.deepStrictEqual(rows.receipts, [])
          })
      )
    }
  )
})
