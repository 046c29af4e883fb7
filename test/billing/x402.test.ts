import { afterAll, assert, describe, layer } from "@effect/vitest"
import { toClientEvmSigner } from "@x402/evm"
import { ExactEvmScheme } from "@x402/evm/exact/client"
import { decodePaymentResponseHeader, x402Client } from "@x402/fetch"
import { Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { createPublicClient, http } from "viem"
import { foundry } from "viem/chains"
import { AppConfig, type X402Config } from "../../src/config.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { FacilitatorUnavailable, X402Facilitator } from "../../src/payments/X402Facilitator.ts"
import { encodeX402Header } from "../../src/payments/x402Wire.ts"
import { callTool, connect, modes } from "../mcp/support.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { appInstance, TestApp, testApp } from "../support/app.ts"
import {
  type Chain,
  chainAvailable,
  facilitatorPrivateKey,
  network,
  payer,
  payingFetch,
  payTo,
  poorPayer,
  startChain,
  tokenName,
  tokenVersion
} from "../support/chain.ts"
import { freshDatabase, storeName } from "../support/database.ts"
import { scrapeMetrics, seriesValue } from "../support/metrics.ts"
import { testOperations } from "../support/testOperations.ts"

/**
 * The x402 rail end to end on a local chain: anvil, our EIP-3009 token, the library's facilitator
 * in process, and the official client `@x402/fetch` paying with a viem account. Balances are read
 * on-chain, not only from our rows.
 */

const available = chainAvailable()
const chain: Chain | undefined = available ? await startChain() : undefined
afterAll(() => chain?.stop())

const x402Of = (token: string, facilitator: X402Config["facilitator"]): X402Config => ({
  payTo,
  network,
  asset: token,
  assetName: tokenName,
  assetVersion: tokenVersion,
  atomicPerCredit: 2000,
  minCredits: 500,
  facilitator
})

const freshIp = ipSequence("10.64")

const purchasesOf = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{
      rail: string
      credits: number | string
      payer: string
      network: string
      transaction_hash: string
      amount_atomic: string
    }>`SELECT rail, credits, payer, network, transaction_hash, amount_atomic FROM purchases WHERE account_id = ${accountId}`
  }).pipe(Effect.orDie)

const buy = (url: string, key: string, credits: number, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/v1/credits/x402`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      body: JSON.stringify({ credits })
    })
    return { status: response.status, headers: response.headers, body: (await response.json()) as any }
  })

describe.skipIf(!available)(`x402: POST /v1/credits/x402 on a local chain (${storeName})`, () => {
  if (chain === undefined) return
  const config = x402Of(chain.token, {
    _tag: "InProcess",
    rpcUrl: chain.rpcUrl,
    privateKey: Redacted.make(facilitatorPrivateKey)
  })
  layer(testApp(testOperations, { x402: Option.some(config) }), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect(
      "unpaid: 402 with PAYMENT-REQUIRED; paid with @x402/fetch: settled on-chain, credited once, a replay credits nothing",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const { key, account_id } = yield* app.mint(freshIp())

          const unpaid = yield* buy(app.url, key, 500)
          assert.strictEqual(unpaid.status, 402, JSON.stringify(unpaid.body))
          assert.strictEqual(unpaid.body.code, "INSUFFICIENT_CREDITS")
          const required = JSON.parse(
            Buffer.from(unpaid.headers.get("payment-required") ?? "", "base64").toString("utf8")
          )
          assert.strictEqual(required.x402Version, 2)
          assert.strictEqual(required.resource.url, "http://svc.test/v1/credits/x402")
          assert.deepStrictEqual(required.accepts, [
            {
              scheme: "exact",
              network,
              amount: "1000000",
              asset: chain.token,
              payTo,
              maxTimeoutSeconds: 300,
              extra: { name: tokenName, version: tokenVersion }
            }
          ])
          assert.deepStrictEqual(unpaid.body.offer.x402, required)
          assert.include(unpaid.body.offer.rails, "x402")

          const payerBefore = yield* Effect.promise(() => chain.balanceOf(payer.address))
          const payToBefore = yield* Effect.promise(() => chain.balanceOf(payTo))
          const client = payingFetch(chain, payer)
          const paid = yield* Effect.promise(async () => {
            const response = await client.pay(`${app.url}/v1/credits/x402`, {
              method: "POST",
              headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
              body: JSON.stringify({ credits: 500 })
            })
            return {
              status: response.status,
              headers: response.headers,
              body: (await response.json()) as any
            }
          })
          assert.strictEqual(paid.status, 200, JSON.stringify(paid.body))
          assert.strictEqual(paid.body.credits_added, 500)
          assert.strictEqual(paid.body.balance_credits, 500)
          assert.strictEqual(paid.body.plan, "flex")
          assert.match(paid.body.transaction, /^0x[0-9a-f]{64}$/)
          const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response") ?? "")
          assert.isTrue(settlement.success)
          assert.strictEqual(settlement.transaction, paid.body.transaction)
          assert.strictEqual(settlement.network, network)

          // On-chain: the payer paid exactly 500 credits' worth, the payee got it, in that transaction.
          assert.strictEqual(
            yield* Effect.promise(() => chain.balanceOf(payer.address)),
            payerBefore - 1_000_000n
          )
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payTo)), payToBefore + 1_000_000n)
          const transfers = yield* Effect.promise(() => chain.transfersFrom(payer.address))
          assert.deepInclude(transfers, { to: payTo, value: 1_000_000n, transaction: paid.body.transaction })

          const rows = yield* purchasesOf(account_id)
          assert.strictEqual(rows.length, 1)
          assert.strictEqual(rows[0]!.rail, "x402")
          assert.strictEqual(Number(rows[0]!.credits), 500)
          assert.strictEqual(rows[0]!.payer, payer.address.toLowerCase())
          assert.strictEqual(rows[0]!.network, network)
          assert.strictEqual(rows[0]!.transaction_hash, paid.body.transaction)
          assert.strictEqual(rows[0]!.amount_atomic, "1000000")

          // The operator's purchases (and the portal, which reads the same history) name the payer,
          // the network and the transaction.
          const report = yield* (yield* Admin).purchases(account_id).pipe(Effect.orDie)
          assert.deepInclude(report?.purchases[0], {
            rail: "x402",
            credits: 500,
            payer: payer.address.toLowerCase(),
            network,
            transaction_hash: paid.body.transaction
          })

          // The audit log and the metric show it.
          const audited = yield* Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            return yield* sql<{
              action: string
            }>`SELECT action FROM audit_events WHERE account_id = ${account_id} AND action = 'credits.purchased'`
          }).pipe(Effect.orDie)
          assert.strictEqual(audited.length, 1)
          const metrics = yield* scrapeMetrics
          assert.isAtLeast(seriesValue(metrics, 'svc_x402_settlements_total{outcome="settled"}'), 1)

          // The same PAYMENT-SIGNATURE again, to this account or another: refused, nothing credited.
          const signature = client.sent
            .map((headers) => headers.get("payment-signature"))
            .find((h) => h !== null)
          assert.isDefined(signature)
          const other = yield* app.mint(freshIp())
          for (const buyer of [key, other.key]) {
            const replayed: { status: number; headers: Headers; body: any } = yield* buy(
              app.url,
              buyer,
              500,
              { "payment-signature": signature! }
            )
            assert.strictEqual(replayed.status, 402, JSON.stringify(replayed.body))
            assert.strictEqual(replayed.body.code, "INSUFFICIENT_CREDITS")
            assert.strictEqual(replayed.body.reason, "authorization_already_used")
            assert.isNotNull(replayed.headers.get("payment-required"))
          }
          assert.strictEqual((yield* purchasesOf(account_id)).length, 1)
          assert.strictEqual((yield* purchasesOf(other.account_id)).length, 0)
          assert.strictEqual(
            yield* Effect.promise(() => chain.balanceOf(payer.address)),
            payerBefore - 1_000_000n
          )

          assert.isAtLeast(
            seriesValue(yield* scrapeMetrics, 'svc_x402_settlements_total{outcome="replayed"}'),
            2
          )

          // A trial key whose free budget is spent is told of the rail too.
          const capped = yield* app.call("/v1/profnet/test-echo?value=x&limit=11", {
            key: other.key,
            ip: freshIp()
          })
          assert.strictEqual(capped.body.code, "TRIAL_CAP_EXCEEDED")
          assert.include(capped.body.offer.rails, "x402")

          // The same signature for another number of credits: the amount does not match.
          const wrongAmount = yield* buy(app.url, key, 600, { "payment-signature": signature! })
          assert.strictEqual(wrongAmount.status, 402)
          assert.strictEqual(wrongAmount.body.reason, "invalid_amount")
        })
    )

    it.effect(
      "inline: INSUFFICIENT_CREDITS carries PAYMENT-REQUIRED; @x402/fetch pays in the retry with the same Idempotency-Key, charged once",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const { key, account_id, ip } = yield* paidKey(freshIp(), 0)
          const path = "/v1/profnet/test-echo?value=inline&cost=7"
          const idempotencyKey = `x402-inline-${account_id}`
          const refused = yield* app.call(path, { key, ip, idempotencyKey })
          assert.strictEqual(refused.status, 402, refused.text)
          assert.strictEqual(refused.body.code, "INSUFFICIENT_CREDITS")
          const required = JSON.parse(
            Buffer.from(refused.headers.get("payment-required") ?? "", "base64").toString("utf8")
          )
          assert.strictEqual(required.resource.url, `http://svc.test${path}`)
          // The shortfall is 7 credits: the payment is the rail's minimum, 500 credits.
          assert.strictEqual(required.accepts[0].amount, "1000000")
          assert.deepStrictEqual(refused.body.offer.x402, required)
          assert.strictEqual(refused.body.offer.resume.action, "retry_same_idempotency_key")

          const payerBefore = yield* Effect.promise(() => chain.balanceOf(payer.address))
          const payToBefore = yield* Effect.promise(() => chain.balanceOf(payTo))
          const client = payingFetch(chain, payer)
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
          assert.strictEqual(paid.headers.get("credits-remaining"), "493")
          const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response") ?? "")
          assert.isTrue(settlement.success)
          assert.strictEqual(
            yield* Effect.promise(() => chain.balanceOf(payer.address)),
            payerBefore - 1_000_000n
          )
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payTo)), payToBefore + 1_000_000n)
          const rows = yield* purchasesOf(account_id)
          assert.strictEqual(rows.length, 1)
          assert.strictEqual(rows[0]!.transaction_hash, settlement.transaction)

          // The paid retry sent again (the same signature and key): the stored answer, nothing paid or charged again.
          const signature = client.sent.map((sent) => sent.get("payment-signature")).find((h) => h !== null)
          assert.isDefined(signature)
          const again = yield* app.call(path, {
            key,
            ip,
            idempotencyKey,
            headers: { "payment-signature": signature! }
          })
          assert.strictEqual(again.status, 200, again.text)
          assert.strictEqual(again.headers.get("idempotent-replayed"), "true")
          assert.strictEqual(again.headers.get("x-credits-charged"), "0")
          assert.strictEqual((yield* purchasesOf(account_id)).length, 1)
          const balance = yield* Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const [row] = yield* sql<{
              balance_credits: number | string
            }>`SELECT balance_credits FROM accounts WHERE id = ${account_id}`
            return Number(row?.balance_credits)
          }).pipe(Effect.orDie)
          assert.strictEqual(balance, 493)
          assert.strictEqual(
            yield* Effect.promise(() => chain.balanceOf(payer.address)),
            payerBefore - 1_000_000n
          )
        })
    )

    it.effect(
      "MCP: the error result carries PaymentRequired; _meta x402/payment pays, the result carries x402/payment-response",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          for (const mode of modes) {
            const { key, account_id, ip } = yield* paidKey(freshIp(), 0)
            const mcp = yield* connect(`${app.url}/mcp`, { key, ip }, mode)
            const args = { value: "mcp", cost: 9, idempotency_key: `x402-mcp-${account_id}` }
            const refused = yield* callTool(mcp, "testEcho", args)
            assert.isTrue(refused.isError, mode.name)
            assert.strictEqual(refused.problem.code, "INSUFFICIENT_CREDITS")
            assert.strictEqual(refused.structured.x402Version, 2)
            assert.strictEqual(refused.structured.resource.url, "http://svc.test/mcp")
            assert.strictEqual(refused.structured.accepts[0].amount, "1000000")
            const payerBefore = yield* Effect.promise(() => chain.balanceOf(payer.address))
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
            const payment = yield* Effect.promise(() => client.createPaymentPayload(refused.structured))
            const paid = yield* Effect.promise(() =>
              mcp.callTool({ name: "testEcho", arguments: args, _meta: { "x402/payment": payment } })
            )
            assert.notStrictEqual(paid.isError, true, JSON.stringify(paid.content))
            const settlement = (paid._meta as any)?.["x402/payment-response"]
            assert.isTrue(settlement?.success, JSON.stringify(paid._meta))
            assert.strictEqual((paid._meta as any)["svc/usage"].credits_charged, 9)
            assert.strictEqual((paid._meta as any)["svc/usage"].credits_remaining, 491)
            assert.strictEqual(
              yield* Effect.promise(() => chain.balanceOf(payer.address)),
              payerBefore - 1_000_000n
            )
            const rows = yield* purchasesOf(account_id)
            assert.strictEqual(rows.length, 1)
            assert.strictEqual(rows[0]!.transaction_hash, settlement.transaction)
          }
        }).pipe(Effect.scoped)
    )

    it.effect(
      "a payer without the funds, a foreign payee, a malformed header: refused, nothing credited",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const { key, account_id } = yield* app.mint(freshIp())
          const poor = payingFetch(chain, poorPayer)
          const refused = yield* Effect.promise(async () => {
            const response = await poor.pay(`${app.url}/v1/credits/x402`, {
              method: "POST",
              headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
              body: JSON.stringify({ credits: 500 })
            })
            return { status: response.status, body: (await response.json()) as any }
          })
          assert.strictEqual(refused.status, 402, JSON.stringify(refused.body))
          assert.strictEqual(refused.body.code, "INSUFFICIENT_CREDITS")
          assert.match(refused.body.reason, /balance|funds/i)

          // A payment signed for someone else's payee.
          const required = {
            x402Version: 2,
            resource: { url: `${app.url}/v1/credits/x402` },
            accepts: [
              {
                scheme: "exact",
                network,
                amount: "1000000",
                asset: chain.token,
                payTo: poorPayer.address,
                maxTimeoutSeconds: 300,
                extra: { name: tokenName, version: tokenVersion }
              }
            ]
          }
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
          const foreign = yield* Effect.promise(() => client.createPaymentPayload(required as never))
          const wrongPayee = yield* buy(app.url, key, 500, { "payment-signature": encodeX402Header(foreign) })
          assert.strictEqual(wrongPayee.status, 402)
          assert.strictEqual(wrongPayee.body.reason, "requirements_mismatch")

          const malformed = yield* buy(app.url, key, 500, { "payment-signature": "not-a-payment" })
          assert.strictEqual(malformed.status, 400)
          assert.strictEqual(malformed.body.code, "INVALID_INPUT")
          assert.strictEqual(malformed.body.param, "PAYMENT-SIGNATURE")

          const tooFew = yield* buy(app.url, key, 499)
          assert.strictEqual(tooFew.status, 400)
          assert.strictEqual(tooFew.body.param, "credits")
          assert.strictEqual((yield* purchasesOf(account_id)).length, 0)

          // A call that fails after its payment settled (its quote is above its max_credits): the
          // problem says the credits stay on the balance, and they do.
          const inline = yield* paidKey(freshIp(), 0)
          const path = "/v1/profnet/test-echo?value=after&cost=7&max_credits=1"
          const needed = {
            ...required,
            resource: { url: `http://svc.test${path}` },
            accepts: [{ ...required.accepts[0]!, payTo }]
          }
          const payment = yield* Effect.promise(() => client.createPaymentPayload(needed as never))
          const failed = yield* app.call(path, {
            key: inline.key,
            ip: inline.ip,
            idempotencyKey: `x402-after-${inline.account_id}`,
            headers: { "payment-signature": encodeX402Header(payment) }
          })
          assert.strictEqual(failed.body.code, "QUOTE_EXCEEDS_MAX_CREDITS", failed.text)
          assert.include(failed.body.message, "stay on the balance")
          assert.isNotNull(failed.headers.get("payment-response"))
          assert.strictEqual((yield* purchasesOf(inline.account_id)).length, 1)
        })
    )
  })
})

describe.skipIf(!available)(`x402: a facilitator that does not answer (${storeName})`, () => {
  if (chain === undefined) return
  // A facilitator over HTTP at a closed port of this machine: never the library's public default.
  const config = x402Of(chain.token, { _tag: "Remote", url: "http://127.0.0.1:9/facilitator" })
  layer(testApp(testOperations, { x402: Option.some(config) }), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect("UPSTREAM_UNAVAILABLE, nothing credited, nothing moved on-chain", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, account_id } = yield* app.mint(freshIp())
        const before = yield* Effect.promise(() => chain.balanceOf(payer.address))
        const client = payingFetch(chain, payer)
        const down = yield* Effect.promise(async () => {
          const response = await client.pay(`${app.url}/v1/credits/x402`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify({ credits: 500 })
          })
          return { status: response.status, body: (await response.json()) as any }
        })
        assert.strictEqual(down.status, 502, JSON.stringify(down.body))
        assert.strictEqual(down.body.code, "UPSTREAM_UNAVAILABLE")
        assert.strictEqual((yield* purchasesOf(account_id)).length, 0)
        assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before)
      })
    )
  })
})

/** The real facilitator, except that its first settlement's answer is lost after it went on-chain. */
const losingFirstAnswer = Layer.effect(
  X402Facilitator,
  Effect.gen(function* () {
    const real = yield* X402Facilitator
    let lost = false
    return X402Facilitator.of({
      ...real,
      settle: (payload, requirements) =>
        lost
          ? real.settle(payload, requirements)
          : Effect.flatMap(real.settle(payload, requirements), () => {
              lost = true
              return Effect.fail(new FacilitatorUnavailable({ message: "the answer was lost" }))
            })
    })
  })
).pipe(Layer.provide(X402Facilitator.layer))

describe.skipIf(!available)(`x402: a settlement whose answer was lost (${storeName})`, () => {
  if (chain === undefined) return
  const config = x402Of(chain.token, {
    _tag: "InProcess",
    rpcUrl: chain.rpcUrl,
    privateKey: Redacted.make(facilitatorPrivateKey)
  })
  layer(testApp(testOperations, { x402: Option.some(config) }, undefined, losingFirstAnswer), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect("the next attempt finds the transfer on-chain and credits it once; nothing moves twice", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, account_id } = yield* app.mint(freshIp())
        const before = yield* Effect.promise(() => chain.balanceOf(payer.address))
        const client = payingFetch(chain, payer)
        const lost = yield* Effect.promise(async () => {
          const response = await client.pay(`${app.url}/v1/credits/x402`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify({ credits: 500 })
          })
          return { status: response.status, body: (await response.json()) as any }
        })
        assert.strictEqual(lost.status, 502, JSON.stringify(lost.body))
        // The transfer happened; nothing is credited yet.
        assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before - 1_000_000n)
        assert.strictEqual((yield* purchasesOf(account_id)).length, 0)

        const signature = client.sent
          .map((headers) => headers.get("payment-signature"))
          .find((h) => h !== null)
        assert.isDefined(signature)
        const found = yield* buy(app.url, key, 500, { "payment-signature": signature! })
        assert.strictEqual(found.status, 200, JSON.stringify(found.body))
        assert.strictEqual(found.body.credits_added, 500)
        const transfers = yield* Effect.promise(() => chain.transfersFrom(payer.address))
        assert.deepInclude(transfers, { to: payTo, value: 1_000_000n, transaction: found.body.transaction })
        assert.isTrue(decodePaymentResponseHeader(found.headers.get("payment-response") ?? "").success)

        const again = yield* buy(app.url, key, 500, { "payment-signature": signature! })
        assert.strictEqual(again.status, 402)
        assert.strictEqual(again.body.reason, "authorization_already_used")
        const rows = yield* purchasesOf(account_id)
        assert.strictEqual(rows.length, 1)
        assert.strictEqual(rows[0]!.transaction_hash, found.body.transaction)
        assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before - 1_000_000n)
      })
    )
  })
})

describe.skipIf(!available)(`x402: two instances racing one authorization (${storeName})`, () => {
  if (chain === undefined) return
  const config = x402Of(chain.token, {
    _tag: "InProcess",
    rpcUrl: chain.rpcUrl,
    privateKey: Redacted.make(facilitatorPrivateKey)
  })
  const overrides = { trustedProxies: ["127.0.0.1", "::1"], x402: Option.some(config) }
  layer(freshDatabase.pipe(Layer.provideMerge(AppConfig.layerTest(overrides))), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect.runIf(storeName === "postgres")(
      "one credit and one transfer, whichever instance wins (PostgreSQL only)",
      () =>
        Effect.gen(function* () {
          const a = (yield* appInstance(testOperations, overrides)).client
          const b = (yield* appInstance(testOperations, overrides)).client
          const { key, account_id } = yield* a.mint(freshIp())
          const unpaid = yield* buy(a.url, key, 500)
          const required = JSON.parse(
            Buffer.from(unpaid.headers.get("payment-required") ?? "", "base64").toString("utf8")
          )
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
          const signature = encodeX402Header(
            yield* Effect.promise(() => client.createPaymentPayload(required))
          )
          const before = yield* Effect.promise(() => chain.balanceOf(payer.address))
          const answers = yield* Effect.all(
            [a, b].map((instance) => buy(instance.url, key, 500, { "payment-signature": signature })),
            { concurrency: "unbounded" }
          )
          const statuses = answers.map((answer) => answer.status)
          assert.strictEqual(
            statuses.filter((status) => status === 200).length,
            1,
            JSON.stringify(answers.map((x) => x.body))
          )
          const rows = yield* purchasesOf(account_id)
          assert.strictEqual(rows.length, 1)
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before - 1_000_000n)
          const won = answers.find((answer) => answer.status === 200)!
          assert.strictEqual(rows[0]!.transaction_hash, won.body.transaction)
        }).pipe(Effect.scoped)
    )
  })
})
