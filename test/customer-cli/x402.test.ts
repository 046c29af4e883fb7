import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { operations } from "../../src/operations/registry.ts"
import { TestApp, testApp } from "../support/app.ts"
import {
  type Chain,
  chainAvailable,
  network,
  payer,
  startChain,
  tokenName,
  x402ConfigOf
} from "../support/chain.ts"
import { freshHome, svc } from "./run.ts"

/**
 * `svc buy --rail x402` on a local chain (anvil, our EIP-3009 token, the facilitator in process):
 * the price shown, confirmation asked (or `--yes`), paid from the key of a file or the environment,
 * the purchase printed; the key never printed. Token balances are read on-chain.
 */

const available = chainAvailable()
const chain: Chain | undefined = available ? await startChain() : undefined
afterAll(() => chain?.stop())

const payerKey = `0x${Buffer.from(payer.getHdKey().privateKey ?? new Uint8Array()).toString("hex")}`
/** 500 credits at 2,000 token units a credit. */
const price = 1_000_000n

const purchasesOf = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{
      transaction_hash: string
    }>`SELECT transaction_hash FROM purchases WHERE account_id = ${accountId} AND rail = 'x402'`
  }).pipe(Effect.orDie)

describe.skipIf(!available)("svc buy --rail x402 on a local chain", () => {
  if (chain === undefined) return
  const x402 = x402ConfigOf(chain)
  layer(testApp(operations, { x402: Option.some(x402) }), { timeout: 120_000, excludeTestServices: true })(
    (it) => {
      it.effect("with a key file and --yes: shows the price, pays it once, prints the purchase", () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const home = freshHome()
          const env = { baseUrl: app.url, home }
          assert.strictEqual((yield* svc(["init"], env)).code, 0)
          const { account_id } = (yield* app.call("/v1/usage", { key: yield* keyOf(home) })).body
          const keyFile = join(home, "payer.key")
          writeFileSync(keyFile, `${payerKey}\n`, { mode: 0o600 })
          const before = yield* Effect.promise(() => chain.balanceOf(payer.address))

          const bought = yield* svc(
            ["buy", "--rail", "x402", "--credits", "500", "--key-file", keyFile, "--yes"],
            env
          )
          assert.strictEqual(bought.code, 0, bought.stderr)
          assert.include(
            bought.stderr,
            `500 credits cost 1000000 token units of ${tokenName} (${chain.token}) on ${network}`
          )
          assert.include(bought.stderr, `by ${payer.address}`)
          assert.include(bought.stdout, "Bought 500 credits: the balance is 500 credits (plan flex).")
          const transaction = /transaction (0x[0-9a-f]{64})/.exec(bought.stdout)?.[1]
          assert.isDefined(transaction, bought.stdout)
          assert.notInclude(bought.stdout + bought.stderr, payerKey.slice(2))

          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before - price)
          assert.deepStrictEqual(yield* purchasesOf(account_id), [{ transaction_hash: transaction! }])
        })
      )

      it.effect("from the environment: asks, pays on `y`, pays nothing on `n` or no answer", () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const home = freshHome()
          assert.strictEqual((yield* svc(["init"], { baseUrl: app.url, home })).code, 0)
          const { account_id } = (yield* app.call("/v1/usage", { key: yield* keyOf(home) })).body
          const extra = { SVC_X402_PRIVATE_KEY: payerKey }
          const args = ["buy", "--rail", "x402", "--credits", "600"]
          const before = yield* Effect.promise(() => chain.balanceOf(payer.address))

          for (const input of ["n\n", undefined]) {
            const declined = yield* svc(args, { baseUrl: app.url, home, extra, ...(input ? { input } : {}) })
            assert.strictEqual(declined.code, 1, declined.stderr)
            assert.include(declined.stderr, "Pay? [y/N]")
            assert.include(declined.stderr, "Not bought: nothing was paid.")
          }
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before)
          assert.deepStrictEqual(yield* purchasesOf(account_id), [])

          const paid = yield* svc(args, { baseUrl: app.url, home, extra, input: "y\n" })
          assert.strictEqual(paid.code, 0, paid.stderr)
          assert.include(paid.stdout, "Bought 600 credits")
          assert.notInclude(paid.stdout + paid.stderr, payerKey.slice(2))
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before - 1_200_000n)
          assert.strictEqual((yield* purchasesOf(account_id)).length, 1)
        })
      )

      it.effect("refuses without a usable key, or with a pack, before anything is paid (exit 2)", () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const home = freshHome()
          const env = { baseUrl: app.url, home }
          assert.strictEqual((yield* svc(["init"], env)).code, 0)
          const before = yield* Effect.promise(() => chain.balanceOf(payer.address))
          const missing = yield* svc(["buy", "--rail", "x402", "--credits", "500", "--yes"], env)
          assert.strictEqual(missing.code, 2, missing.stderr)
          assert.include(missing.stderr, "SVC_X402_PRIVATE_KEY")
          const garbled = yield* svc(["buy", "--rail", "x402", "--credits", "500", "--yes"], {
            ...env,
            extra: { SVC_X402_PRIVATE_KEY: "0xnot-a-key-at-all" }
          })
          assert.strictEqual(garbled.code, 2, garbled.stderr)
          assert.notInclude(garbled.stderr, "not-a-key-at-all")
          const withPack = yield* svc(["buy", "flex", "--rail", "x402", "--credits", "500"], env)
          assert.strictEqual(withPack.code, 2, withPack.stderr)
          assert.strictEqual(yield* Effect.promise(() => chain.balanceOf(payer.address)), before)
        })
      )
    }
  )
})

const keyOf = (home: string) =>
  Effect.sync(() => JSON.parse(readFileSync(join(home, "svc", "config.json"), "utf8")).key as string)
