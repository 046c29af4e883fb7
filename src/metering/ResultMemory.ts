import type { Envelope } from "../contract/envelope.ts"

export interface Stored {
  readonly fingerprint: string
  readonly envelope: Envelope
  readonly replayUntil: number
  readonly size: number
  /** The replay's JSON (`receipt.replayed: true`), made at the first replay and kept for the next. */
  replayJson?: string
}

export interface ResultMemory {
  readonly replay: (accountId: string, key: string, now: number) => Stored | undefined
  readonly remember: (
    accountId: string,
    key: string,
    stored: Omit<Stored, "size" | "replayJson"> & { readonly size?: number }
  ) => void
}

/**
 * The stored results of completed Idempotency-Keys in this instance's memory, so a replay needs no
 * database: a completed key's result never changes, and it is forgotten when its replay window
 * ends, or least recently used first past `maxBytes` (counted as the data's JSON length).
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
      const size = stored.size ?? JSON.stringify(stored.envelope.data).length
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
