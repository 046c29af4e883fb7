import type { Envelope } from "../contract/envelope.ts"
import type { Receipt } from "./receipt.ts"

/**
 * A completed key's result as this instance keeps it: the result's JSON as the call stored it, and
 * the receipt, rather than the envelope's objects. Most keys are never replayed, and a string holds
 * the data in a third of the bytes its objects take; the first replay makes the answer and keeps it.
 */
export interface Stored {
  readonly fingerprint: string
  /** The `CallResult` as JSON: what the key stores in the ledger too. */
  readonly resultJson: string
  readonly receipt: Receipt
  readonly replayUntil: number
  readonly size: number
  /** The replay's envelope and JSON (`receipt.replayed: true`), made at the first replay and kept for the next. */
  replayAnswer?: { readonly envelope: Envelope; readonly json: string }
}

export interface ResultMemory {
  readonly replay: (accountId: string, key: string, now: number) => Stored | undefined
  readonly remember: (accountId: string, key: string, stored: Omit<Stored, "size" | "replayAnswer">) => void
}

/** A character V8 cannot store at one byte (past Latin-1): a string holding one is two bytes a character. */
const pastLatin1 = /[\u0100-\uffff]/

/**
 * What one remembered result holds of the heap, in bytes, counted generously: its JSON at the bytes
 * a character V8 stores it at (one, or two once any character is past Latin-1), and 512 bytes for
 * the map's entry, its key, the receipt and their strings. Measured in the service (the bench's
 * cache hit on PostgreSQL, the live heap after a full collection): a profile's 793-character
 * result holds about 1.0 KB, counted 1.3 KB here.
 */
export const heldBytes = (resultJson: string): number =>
  (pastLatin1.test(resultJson) ? 2 : 1) * resultJson.length + 512

/**
 * The stored results of completed Idempotency-Keys in this instance's memory, so a replay needs no
 * database: a completed key's result never changes, and it is forgotten when its replay window
 * ends, or least recently used first past `maxBytes` of the heap (`heldBytes`).
 */
export const resultMemory = (maxBytes: number): ResultMemory => {
  const results = new Map<string, Stored>()
  let bytes = 0
  const drop = (id: string) => {
    const stored = results.get(id)
    if (stored === undefined) return
    results.delete(id)
    bytes -= stored.size
  }
  return {
    replay: (accountId, key, now) => {
      const id = `${accountId} ${key}`
      const stored = results.get(id)
      if (stored === undefined) return undefined
      results.delete(id)
      if (stored.replayUntil <= now) {
        bytes -= stored.size
        return undefined
      }
      results.set(id, stored)
      return stored
    },
    remember: (accountId, key, stored) => {
      const id = `${accountId} ${key}`
      const size = heldBytes(stored.resultJson)
      drop(id)
      if (size > maxBytes / 8) return
      results.set(id, { ...stored, size })
      bytes += size
      for (const oldest of results.keys()) {
        if (bytes <= maxBytes) break
        drop(oldest)
      }
    }
  }
}
