/**
 * The x402 invariant: every x402 purchase row matches one on-chain transfer. A row names its
 * payer, its amount in the token's units and the settling transaction; the chain's `Transfer`
 * events of the token to the service's `payTo` are the money that moved. Each row needs exactly
 * one transfer in its transaction, from its payer, of its amount; no two rows may name one
 * transfer (credited twice); and every transfer to `payTo` needs its row (paid and never credited:
 * lost), except those a begun settlement still accounts for (`pendingTransactions`, which the
 * reconciler credits later).
 *
 * `x402Problems` is pure, so a test can plant a mismatch; `readX402Rows` and `readTransfers` read
 * the two sides from the storm's PostgreSQL and its chain.
 */
import type { PgSession } from "../pg.ts"

/** An x402 purchase as the `purchases` table holds it. */
export interface X402PurchaseRow {
  readonly id: string
  readonly payer: string | null
  readonly asset: string | null
  readonly amount_atomic: string | null
  readonly transaction_hash: string | null
}

/** One `Transfer(from, to, value)` of the token to `payTo`, as the chain logged it. */
export interface TokenTransfer {
  readonly transaction: string
  readonly from: string
  readonly to: string
  readonly value: bigint
}

const short = (hash: string) => (hash.length > 14 ? `${hash.slice(0, 10)}…` : hash)

/** What breaks the invariant, one sentence each; empty when every row and every transfer match. */
export const x402Problems = (
  rows: ReadonlyArray<X402PurchaseRow>,
  transfers: ReadonlyArray<TokenTransfer>,
  /** Transactions of settlements begun and not yet credited (`x402_settlements`, found on-chain). */
  pendingTransactions: ReadonlySet<string> = new Set()
): Array<string> => {
  const problems: Array<string> = []
  const byTransaction = new Map<string, Array<TokenTransfer>>()
  for (const transfer of transfers) {
    const key = transfer.transaction.toLowerCase()
    byTransaction.set(key, [...(byTransaction.get(key) ?? []), transfer])
  }
  const claimed = new Map<string, string>()
  for (const row of rows) {
    if (row.transaction_hash === null || row.payer === null || row.amount_atomic === null) {
      problems.push(`purchase ${row.id}: an x402 row without its transaction, payer or amount`)
      continue
    }
    const transaction = row.transaction_hash.toLowerCase()
    const earlier = claimed.get(transaction)
    if (earlier !== undefined) {
      problems.push(
        `purchase ${row.id}: transaction ${short(transaction)} is already purchase ${earlier}'s (credited twice)`
      )
      continue
    }
    claimed.set(transaction, row.id)
    const found = byTransaction.get(transaction) ?? []
    if (found.length !== 1) {
      problems.push(
        `purchase ${row.id}: transaction ${short(transaction)} has ${found.length} transfers to payTo, not one`
      )
      continue
    }
    const transfer = found[0]!
    if (transfer.from.toLowerCase() !== row.payer.toLowerCase())
      problems.push(
        `purchase ${row.id}: the transfer is from ${transfer.from}, the row's payer is ${row.payer}`
      )
    if (!/^[0-9]+$/.test(row.amount_atomic) || transfer.value !== BigInt(row.amount_atomic))
      problems.push(
        `purchase ${row.id}: the transfer moved ${transfer.value}, the row says ${row.amount_atomic}`
      )
  }
  for (const [transaction, moved] of byTransaction)
    if (!claimed.has(transaction) && !pendingTransactions.has(transaction))
      problems.push(
        `transaction ${short(transaction)}: ${moved.map((t) => t.value).join(" + ")} paid to payTo and no purchase credits it (lost)`
      )
  return problems
}

/** The x402 purchases of the storm's database. */
export const readX402Rows = (db: PgSession) =>
  db.query<X402PurchaseRow>(
    "SELECT id, payer, asset, amount_atomic, transaction_hash FROM purchases WHERE rail = 'x402' ORDER BY created_at, id"
  )

/** Every `Transfer` of `token` to `payTo` on the chain at `rpcUrl`. */
export const readTransfers = async (
  rpcUrl: string,
  token: string,
  payTo: string
): Promise<Array<TokenTransfer>> => {
  const { createPublicClient, http, parseAbiItem } = await import("viem")
  const client = createPublicClient({ transport: http(rpcUrl) })
  const logs = await client.getLogs({
    address: token as `0x${string}`,
    event: parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)"),
    args: { to: payTo as `0x${string}` },
    fromBlock: 0n,
    toBlock: "latest"
  })
  return logs.map((log) => ({
    transaction: log.transactionHash,
    from: log.args.from ?? "",
    to: log.args.to ?? "",
    value: log.args.value ?? 0n
  }))
}
