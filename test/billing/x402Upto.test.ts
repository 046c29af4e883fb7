import { afterAll, assert, describe, layer } from "@effect/vitest"
import { x402Facilitator } from "@x402/core/facilitator"
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types"
import { PERMIT2_ADDRESS, toClientEvmSigner, toFacilitatorEvmSigner } from "@x402/evm"
import { UptoEvmScheme } from "@x402/evm/upto/client"
import { UptoEvmScheme as UptoFacilitatorScheme } from "@x402/evm/upto/facilitator"
import { decodePaymentResponseHeader } from "@x402/fetch"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import {
  type Account,
  createPublicClient,
  createWalletClient,
  http,
  maxUint256,
  type PrivateKeyAccount,
  publicActions
} from "viem"
import { foundry } from "viem/chains"
import { X402Facilitator } from "../../src/payments/X402Facilitator.ts"
import { reconcileAfterMs, X402Reconciler } from "../../src/payments/X402Reconciler.ts"
import { encodeX402Header } from "../../src/payments/x402Wire.ts"
import { callTool, connect, modes } from "../mcp/support.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import {
  type Chain,
  chainAvailable,
  deployer,
  losingAnswers,
  network,
  payer,
  payingFetch,
  payTo,
  startChain,
  tokenAbi,
  x402ConfigOf
} from "../support/chain.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

/**
 * x402's `upto` scheme end to end on the local chain: the agent signs a Permit2 authorization of at
 * most its call's `max_credits` (the official client, `@x402/fetch` with the library's upto
 * scheme), and the service settles only what the call lacks, through the library's upto
 * facilitator, Permit2 and the upto proxy (test/support/contracts/Permit2.sol at their canonical
 * addresses). Balances are read on-chain.
 */

const available = chainAvailable()
const chain: Chain | undefined = available ? await startChain() : undefined
afterAll(() => chain?.stop())

const transport = () => http(chain?.rpcUrl)
const publicClient = () => createPublicClient({ chain: foundry, transport: transport() })

/** The payer lets Permit2 move its tokens (once; a real payer does this once per token). */
const approvePermit2 = async (account: PrivateKeyAccount | Account) => {
  const wallet = createWalletClient({ chain: foundry, transport: transport(), account })
  const hash = await wallet.writeContract({
    address: chain!.token,
    abi: tokenAbi,
    functionName: "approve",
    args: [PERMIT2_ADDRESS, maxUint256],
    chain: foundry
  })
  await publicClient().waitForTransactionReceipt({ hash })
}

const freshIp = ipSequence("10.67")

const decodeRequired = (header: string | null) =>
  JSON.parse(Buffer.from(header ?? "", "base64").toString("utf8"))

/** The library's upto client's payment for `upto` (an upto requirement) at `resource`, signed by `account`. */
const uptoPayment = (upto: PaymentRequirements, resource: unknown, account: Account = payer) =>
  Effect.promise(async () => {
    const scheme = new UptoEvmScheme(toClientEvmSigner(account as never, publicClient() as never))
    const created = await scheme.createPaymentPayload(2, upto)
    return { ...created, accepted: upto, resource }
  })

/** The upto requirement a data call's 402 offers. */
const uptoOffered = (refused: { readonly headers: Headers }) =>
  decodeRequired(refused.headers.get("payment-required")).accepts[1] as PaymentRequirements

const ledgerOf = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const purchases = yield* sql<{
      rail: string
      credits: number | string
      amount_atomic: string
      transaction_hash: string
      payer: string
    }>`SELECT rail, credits, amount_atomic, transaction_hash, payer FROM purchases WHERE account_id = ${accountId}`
    const [account] = yield* sql<{
      balance_credits: number | string
    }>`SELECT balance_credits FROM accounts WHERE id = ${accountId}`
    const begun = yield* sql<{ n: number | string }>`SELECT count(*) AS n FROM x402_settlements`
    return { purchases, balance: Number(account?.balance_credits), begun: Number(begun[0]?.n) }
  }).pipe(Effect.orDie)

describe.skipIf(!available)(`x402 upto: authorize max_credits, settle the shortfall (${storeName})`, () => {
  if (chain === undefined) return
  const config = { ...x402ConfigOf(chain), upto: true }
  layer(testApp(testOperations, { x402: Option.some(config) }), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect(
      "PAYMENT-REQUIRED offers upto for max_credits; @x402/fetch pays; only the shortfall moves on-chain, charged once",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          yield* Effect.promise(() => approvePermit2(payer))
          // 3 credits on the balance, a call quoted 7, at most 20: it lacks 4.
          const { key, account_id, ip } = yield* paidKey(freshIp(), 3)
          const path = "/v1/profnet/test-echo?value=upto&cost=7&max_credits=20"
          const idempotencyKey = `x402-upto-${account_id}`
          const refused = yield* app.call(path, { key, ip, idempotencyKey })
          assert.strictEqual(refused.status, 402, refused.text)
          assert.strictEqual(refused.body.code, "INSUFFICIENT_CREDITS")
          const required = decodeRequired(refused.headers.get("payment-required"))
          assert.deepStrictEqual(
            required.accepts.map((accepts: PaymentRequirements) => [accepts.scheme, accepts.amount]),
            [
              ["exact", "1000000"],
              ["upto", "40000"]
            ]
          )
          assert.strictEqual(required.accepts[1].extra.facilitatorAddress, deployer.address)
          assert.deepStrictEqual(refused.body.offer.x402, required)

          const payerBefore = yield* Effect.promise(() => chain.balanceOf(payer.address))
          const payToBefore = yield* Effect.promise(() => chain.balanceOf(payTo))
          const client = payingFetch(chain, payer, "upto")
          const headers = {
            authorization: `Bearer ${key}`,
            "x-forwarded-for": ip,
            "idempotency-key": idempotencyKey
          }
          const paid = yield* Effect.promise(async () => {
            const response = await client.pay(`${app.url}${path}`, { headers })
            return {
              status: response.status,
              headers: response.headers,
              body: (await response.json()) as any
            }
          })
          assert.strictEqual(paid.status, 200, JSON.stringify(paid.body))
          assert.strictEqual(paid.headers.get("x-credits-charged"), "7")
          assert.strictEqual(paid.headers.get("credits-remaining"), "0")
          const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response") ?? "")
          assert.isTrue(settlement.success)
          // Authorized 40,000 units; 4 credits (8,000 units) moved, no more.
          assert.strictEqual(
            yield* Effect.promise(() => chain.balanceOf(payer.address)),
            payerBefore - 8_000n
          )
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payTo)), payToBefore + 8_000n)
          const transfers = yield* Effect.promise(() => chain.transfersFrom(payer.address))
          assert.deepInclude(transfers, {
            to: payTo,
            value: 8_000n,
            transaction: settlement.transaction as never
          })
          const after = yield* ledgerOf(account_id)
          assert.deepStrictEqual(
            after.purchases.map((row) => ({ ...row, credits: Number(row.credits) })),
            [
              {
                rail: "x402",
                credits: 4,
                amount_atomic: "8000",
                transaction_hash: settlement.transaction,
                payer: payer.address.toLowerCase()
              }
            ]
          )
          assert.strictEqual(after.balance, 0)
          assert.strictEqual(after.begun, 0)

          // The facilitator finds that settlement again by its Permit2 nonce (how a lost answer is
          // recovered); a nonce never spent is not found.
          const signature = client.sent.map((sent) => sent.get("payment-signature")).find((h) => h !== null)
          assert.isDefined(signature)
          const payload = JSON.parse(Buffer.from(signature!, "base64").toString("utf8"))
          const facilitator = yield* X402Facilitator
          const found = yield* facilitator
            .usedBy({
              asset: chain.token,
              from: payer.address,
              nonce: payload.payload.permit2Authorization.nonce
            })
            .pipe(Effect.orDie)
          assert.strictEqual(found, settlement.transaction)
          const unspent = yield* facilitator
            .usedBy({ asset: chain.token, from: payer.address, nonce: "12345" })
            .pipe(Effect.orDie)
          assert.isUndefined(unspent)

          // The paid retry sent again: the stored answer, nothing settled or charged again.
          const again = yield* app.call(path, {
            key,
            ip,
            idempotencyKey,
            headers: { "payment-signature": signature! }
          })
          assert.strictEqual(again.status, 200, again.text)
          assert.strictEqual(again.headers.get("idempotent-replayed"), "true")
          // The same authorization for another call that lacks credits: already used, nothing moves.
          const other = yield* app.call("/v1/profnet/test-echo?value=other&cost=2&max_credits=20", {
            key,
            ip,
            idempotencyKey: `x402-upto-other-${account_id}`,
            headers: { "payment-signature": signature! }
          })
          assert.strictEqual(other.status, 402, other.text)
          assert.strictEqual(other.body.code, "INSUFFICIENT_CREDITS")
          assert.strictEqual(
            yield* Effect.promise(() => chain.balanceOf(payer.address)),
            payerBefore - 8_000n
          )
          assert.strictEqual((yield* ledgerOf(account_id)).purchases.length, 1)
        })
    )

    it.effect(
      "MCP: the error result offers upto for max_credits; _meta x402/payment with it settles only the shortfall",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          yield* Effect.promise(() => approvePermit2(payer))
          for (const mode of modes) {
            const { key, account_id, ip } = yield* paidKey(freshIp(), 2)
            const mcp = yield* connect(`${app.url}/mcp`, { key, ip }, mode)
            const args = {
              value: "mcp",
              cost: 9,
              max_credits: 30,
              idempotency_key: `x402-upto-mcp-${account_id}`
            }
            const refused = yield* callTool(mcp, "testEcho", args)
            assert.isTrue(refused.isError, mode.name)
            assert.strictEqual(refused.problem.code, "INSUFFICIENT_CREDITS")
            assert.deepStrictEqual(
              refused.structured.accepts.map((accepts: PaymentRequirements) => [
                accepts.scheme,
                accepts.amount
              ]),
              [
                ["exact", "1000000"],
                ["upto", "60000"]
              ]
            )
            const before = yield* Effect.promise(() => chain.balanceOf(payer.address))
            const payment = yield* uptoPayment(refused.structured.accepts[1], refused.structured.resource)
            const paid = yield* Effect.promise(() =>
              mcp.callTool({ name: "testEcho", arguments: args, _meta: { "x402/payment": payment } })
            )
            assert.notStrictEqual(paid.isError, true, JSON.stringify(paid.content))
            const settlement = (paid._meta as any)?.["x402/payment-response"]
            assert.isTrue(settlement?.success, JSON.stringify(paid._meta))
            assert.strictEqual((paid._meta as any)["svc/usage"].credits_charged, 9)
            assert.strictEqual((paid._meta as any)["svc/usage"].credits_remaining, 0)
            // 7 credits lacked: 14,000 units moved of the 60,000 authorized.
            assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before - 14_000n)
            const ledger = yield* ledgerOf(account_id)
            assert.deepStrictEqual(
              ledger.purchases.map((row) => [Number(row.credits), row.amount_atomic, row.transaction_hash]),
              [[7, "14000", settlement.transaction]]
            )
          }
        }).pipe(Effect.scoped)
    )

    it.effect(
      "refused, nothing moved or credited: an authorization below the shortfall, upto on the explicit purchase, a payer Permit2 may not debit",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          yield* Effect.promise(() => approvePermit2(payer))
          const { key, account_id, ip } = yield* paidKey(freshIp(), 0)
          const path = "/v1/profnet/test-echo?value=short&cost=5"
          const refused = yield* app.call(path, { key, ip, idempotencyKey: `x402-upto-short-${account_id}` })
          const upto = uptoOffered(refused)
          // Without max_credits the authorization offered is the quote's: 5 credits.
          assert.strictEqual(upto.amount, "10000")
          const signed = (account: Account, amount: string) =>
            Effect.map(
              uptoPayment({ ...upto, amount }, { url: `http://svc.test${path}` }, account),
              encodeX402Header
            )
          const payerBefore = yield* Effect.promise(() => chain.balanceOf(payer.address))

          // At most 2 credits' worth against a shortfall of 5.
          const small = yield* app.call(path, {
            key,
            ip,
            idempotencyKey: `x402-upto-short-${account_id}`,
            headers: { "payment-signature": yield* signed(payer, "4000") }
          })
          assert.strictEqual(small.status, 402, small.text)
          assert.strictEqual(small.body.reason, "invalid_amount")
          assert.isNotNull(small.headers.get("payment-required"))

          // An upto authorization where only the exact scheme is offered: the explicit purchase.
          const explicit = yield* signed(payer, "1000000")
          const bought = yield* Effect.promise(async () => {
            const response = await fetch(`${app.url}/v1/credits/x402`, {
              method: "POST",
              headers: {
                authorization: `Bearer ${key}`,
                "content-type": "application/json",
                "payment-signature": explicit
              },
              body: JSON.stringify({ credits: 500 })
            })
            return { status: response.status, body: (await response.json()) as any }
          })
          assert.strictEqual(bought.status, 402, JSON.stringify(bought.body))
          assert.strictEqual(bought.body.reason, "requirements_mismatch")

          // A payer that never let Permit2 move its tokens (and holds none): the facilitator refuses.
          const { privateKeyToAccount, generatePrivateKey } = yield* Effect.promise(
            () => import("viem/accounts")
          )
          const unknown = privateKeyToAccount(generatePrivateKey())
          const unfunded = yield* app.call(path, {
            key,
            ip,
            idempotencyKey: `x402-upto-short-${account_id}`,
            headers: { "payment-signature": yield* signed(unknown, "10000") }
          })
          assert.strictEqual(unfunded.status, 402, unfunded.text)
          assert.notInclude(["invalid_amount", "requirements_mismatch"], unfunded.body.reason)

          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), payerBefore)
          const ledger = yield* ledgerOf(account_id)
          assert.strictEqual(ledger.purchases.length, 0)
          assert.strictEqual(ledger.balance, 0)
        })
    )
  })
})

/**
 * A paid key with nothing on it whose call (quoted `cost`) was refused and then paid with upto, the
 * settlement's answer lost after it went on-chain: the payment is on-chain, not credited.
 */
const lostUptoPayment = (value: string, cost: number) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    yield* Effect.promise(() => approvePermit2(payer))
    const { key, account_id, ip } = yield* paidKey(freshIp(), 0)
    const path = `/v1/profnet/test-echo?value=${value}&cost=${cost}`
    const idempotencyKey = `x402-upto-${value}-${account_id}`
    const refused = yield* app.call(path, { key, ip, idempotencyKey })
    const signature = encodeX402Header(
      yield* uptoPayment(uptoOffered(refused), { url: `http://svc.test${path}` })
    )
    const before = yield* Effect.promise(() => chain!.balanceOf(payer.address))
    const retry = app.call(path, { key, ip, idempotencyKey, headers: { "payment-signature": signature } })
    const lost = yield* retry
    assert.strictEqual(lost.status, 502, lost.text)
    assert.strictEqual(
      yield* Effect.promise(() => chain!.balanceOf(payer.address)),
      before - BigInt(cost) * 2_000n
    )
    return { account_id, before, retry }
  })

describe.skipIf(!available)(`x402 upto: a settlement whose answer was lost (${storeName})`, () => {
  if (chain === undefined) return
  const config = { ...x402ConfigOf(chain), upto: true }
  layer(testApp(testOperations, { x402: Option.some(config) }, undefined, losingAnswers("after broadcast")), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect(
      "the retry finds the transfer by its Permit2 nonce, credits it once and runs; nothing moves twice",
      () =>
        Effect.gen(function* () {
          const { account_id, before, retry } = yield* lostUptoPayment("lost", 6)
          const stranded = yield* ledgerOf(account_id)
          assert.strictEqual(stranded.purchases.length, 0)
          assert.strictEqual(stranded.begun, 1)

          const retried = yield* retry
          assert.strictEqual(retried.status, 200, retried.text)
          assert.strictEqual(retried.headers.get("x-credits-charged"), "6")
          const after = yield* ledgerOf(account_id)
          assert.strictEqual(after.purchases.length, 1)
          assert.strictEqual(after.purchases[0]!.amount_atomic, "12000")
          assert.strictEqual(after.balance, 0)
          assert.strictEqual(after.begun, 0)
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before - 12_000n)
        })
    )

    it.effect(
      "the reconciler credits it once; the retry then runs on the credits, settling nothing more",
      () =>
        Effect.gen(function* () {
          const reconciler = yield* X402Reconciler
          const { account_id, before, retry } = yield* lostUptoPayment("swept", 3)
          const swept = yield* reconciler.sweep(Date.now() + reconcileAfterMs)
          assert.strictEqual(swept.credited, 1, JSON.stringify(swept))
          const credited = yield* ledgerOf(account_id)
          assert.strictEqual(credited.balance, 3)
          assert.strictEqual(credited.begun, 0)
          const transfers = yield* Effect.promise(() => chain.transfersFrom(payer.address))
          assert.deepInclude(transfers, {
            to: payTo,
            value: 6_000n,
            transaction: credited.purchases[0]!.transaction_hash as never
          })

          const retried = yield* retry
          assert.strictEqual(retried.status, 200, retried.text)
          assert.strictEqual(retried.headers.get("x-credits-charged"), "3")
          assert.isNull(retried.headers.get("payment-response"))
          const after = yield* ledgerOf(account_id)
          assert.strictEqual(after.purchases.length, 1)
          assert.strictEqual(after.balance, 0)
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before - 6_000n)
        })
    )
  })
})

describe.skipIf(!available)(
  "the upto contracts on the local chain (test/support/contracts/Permit2.sol)",
  () => {
    if (chain === undefined) return
    layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
      it.effect("settle up to the authorized amount, once; no more, and only by the named facilitator", () =>
        Effect.promise(async () => {
          await approvePermit2(payer)
          const facilitatorOf = (account: typeof deployer) =>
            new x402Facilitator().register(
              network,
              new UptoFacilitatorScheme(
                toFacilitatorEvmSigner({
                  ...(createWalletClient({ chain: foundry, transport: transport(), account }).extend(
                    publicActions
                  ) as any),
                  address: account.address
                })
              )
            )
          const facilitator = facilitatorOf(deployer)
          const requirements: PaymentRequirements = {
            scheme: "upto",
            network,
            amount: "20000",
            asset: chain.token,
            payTo,
            maxTimeoutSeconds: 300,
            extra: { facilitatorAddress: deployer.address }
          }
          const created = await new UptoEvmScheme(
            toClientEvmSigner(payer as never, publicClient() as never)
          ).createPaymentPayload(2, requirements)
          const payload = { ...created, accepted: requirements } as unknown as PaymentPayload
          assert.isTrue((await facilitator.verify(payload, requirements)).isValid)
          const before = await chain.balanceOf(payer.address)
          // More than authorized: refused before anything is sent.
          const over = await facilitator.settle(payload, { ...requirements, amount: "20001" })
          assert.isFalse(over.success)
          // Another facilitator than the one the payer named: refused.
          const { mnemonicToAccount } = await import("viem/accounts")
          const intruder = mnemonicToAccount("test test test test test test test test test test test junk", {
            addressIndex: 5
          })
          const stolen = await facilitatorOf(intruder as never).settle(payload, {
            ...requirements,
            amount: "6000"
          })
          assert.isFalse(stolen.success)
          assert.strictEqual(await chain.balanceOf(payer.address), before)
          // Less than authorized: exactly that moves, once.
          const settled = await facilitator.settle(payload, { ...requirements, amount: "6000" })
          assert.isTrue(settled.success, JSON.stringify(settled))
          assert.strictEqual(before - (await chain.balanceOf(payer.address)), 6000n)
          const again = await facilitator.settle(payload, { ...requirements, amount: "6000" })
          assert.isFalse(again.success)
          assert.strictEqual(before - (await chain.balanceOf(payer.address)), 6000n)
        })
      )
    })
  }
)
