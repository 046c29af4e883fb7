import { assert, describe, it } from "@effect/vitest"
import { type TokenTransfer, type X402PurchaseRow, x402Problems } from "../../bench/storm/x402Check.ts"

/** The storm's x402 invariant, on rows and transfers planted to match and then to break it. */

const payer = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
const other = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"
const payTo = "0x90f79bf6eb2c4f870365e785982e1f101e93b906"
const tx = (n: number) => `0x${n.toString(16).padStart(64, "0")}`

const row = (id: string, transaction: string, amount = "1000000"): X402PurchaseRow => ({
  id,
  payer,
  asset: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
  amount_atomic: amount,
  transaction_hash: transaction
})
const transfer = (transaction: string, value = 1_000_000n, from = payer): TokenTransfer => ({
  transaction,
  from,
  to: payTo,
  value
})

describe("x402Problems: every x402 purchase row matches one on-chain transfer", () => {
  it("rows and transfers that match: no problem (hashes compared whatever their case)", () => {
    assert.deepStrictEqual(
      x402Problems(
        [row("pur_1", tx(1)), row("pur_2", tx(2).toUpperCase().replace("0X", "0x"), "3000000")],
        [transfer(tx(1)), transfer(tx(2), 3_000_000n)]
      ),
      []
    )
    assert.deepStrictEqual(x402Problems([], []), [])
  })

  it("a planted mismatch of amount, payer, transaction or count is named", () => {
    const wrongAmount = x402Problems([row("pur_1", tx(1), "2000000")], [transfer(tx(1))])
    assert.strictEqual(wrongAmount.length, 1)
    assert.match(wrongAmount[0]!, /pur_1: the transfer moved 1000000, the row says 2000000/)

    const wrongPayer = x402Problems([row("pur_1", tx(1))], [transfer(tx(1), 1_000_000n, other)])
    assert.strictEqual(wrongPayer.length, 1)
    assert.match(wrongPayer[0]!, /pur_1: the transfer is from 0x3c44/)

    // A row naming a transaction that moved nothing to payTo, and the transfer nobody credited.
    const noTransfer = x402Problems([row("pur_1", tx(9))], [transfer(tx(1))])
    assert.strictEqual(noTransfer.length, 2)
    assert.match(noTransfer[0]!, /pur_1: transaction 0x00000000… has 0 transfers to payTo, not one/)
    assert.match(noTransfer[1]!, /no purchase credits it \(lost\)/)

    const twoTransfers = x402Problems([row("pur_1", tx(1))], [transfer(tx(1)), transfer(tx(1))])
    assert.match(twoTransfers[0]!, /has 2 transfers to payTo, not one/)
  })

  it("one transfer credited twice, a row without its transaction, a paid transfer never credited", () => {
    const twice = x402Problems([row("pur_1", tx(1)), row("pur_2", tx(1))], [transfer(tx(1))])
    assert.deepStrictEqual(twice, [
      "purchase pur_2: transaction 0x00000000… is already purchase pur_1's (credited twice)"
    ])

    const incomplete = x402Problems([{ ...row("pur_1", tx(1)), transaction_hash: null }], [])
    assert.deepStrictEqual(incomplete, [
      "purchase pur_1: an x402 row without its transaction, payer or amount"
    ])

    const lost = x402Problems([row("pur_1", tx(1))], [transfer(tx(1)), transfer(tx(2), 4_000_000n)])
    assert.strictEqual(lost.length, 1)
    assert.match(lost[0]!, /4000000 paid to payTo and no purchase credits it \(lost\)/)
    // A settlement begun and not yet credited accounts for its transfer (the reconciler credits it).
    assert.deepStrictEqual(
      x402Problems([row("pur_1", tx(1))], [transfer(tx(1)), transfer(tx(2))], new Set([tx(2)])),
      []
    )
  })
})
