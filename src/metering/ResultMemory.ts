import type { Receipt } from "./receipt.ts"

/** A completed key's result as a replay reads it back from this instance's memory. */
export interface Stored {
  readonly fingerprint: string
  /**
   * The `CallResult` as JSON, what the key stores in the ledger too; or, once a replay has made it
   * (`answer`), the replay's whole answer, kept in its place for the next replay.
   */
  readonly json: string
  readonly answer: boolean
  readonly receipt: Receipt
  readonly replayUntil: number
}

export interface ResultMemory {
  readonly replay: (accountId: string, key: string, now: number) => Stored | undefined
  readonly remember: (accountId: string, key: string, stored: Stored) => void
}

/** The smallest entry the slot table is sized for: a ring of `maxBytes` holds at most this many a byte. */
const smallestEntry = 256

/**
 * The stored results of completed Idempotency-Keys in this instance's memory, so a replay needs no
 * database: a completed key's result never changes, and it is forgotten when its replay window
 * ends, or oldest first once `maxBytes` are used.
 *
 * The results are kept as UTF-8 in one ring of bytes outside V8's heap, written in the order they
 * were completed; the heap holds only a map from account and key to a slot, and the slots' offsets
 * and windows in typed arrays. A result is kept for about as long as `maxBytes` of newer ones take to
 * complete (seconds under load), which is long enough for V8 to move its objects to the old
 * generation and short enough for them to die there: on the heap every result was garbage for a full
 * collection to find, here it is bytes overwritten in place. The oldest result goes first, replayed
 * or not: a key is replayed when its caller retries, seconds after it completed, and a key replayed
 * after it is gone is read from the ledger once and remembered again.
 */
export const resultMemory = (maxBytes: number): ResultMemory => {
  const capacity = Math.max(1, Math.floor(maxBytes / smallestEntry))
  let ring: Buffer | undefined
  const offsets = new Int32Array(capacity)
  const fingerprintEnds = new Int32Array(capacity)
  const resultEnds = new Int32Array(capacity)
  const answers = new Uint8Array(capacity)
  const receiptEnds = new Int32Array(capacity)
  const windows = new Float64Array(capacity)
  /** Each slot's map key, while the map still points at it. */
  const ids: Array<string | undefined> = new Array(capacity).fill(undefined)
  const slots = new Map<string, number>()
  /** The oldest slot, the number of slots in the ring, and where the next entry's bytes go. */
  let oldest = 0
  let count = 0
  let head = 0

  const evictOldest = () => {
    const id = ids[oldest]
    if (id !== undefined && slots.get(id) === oldest) slots.delete(id)
    ids[oldest] = undefined
    oldest = (oldest + 1) % capacity
    count--
  }
  /** Frees `bytes` at the head (wrapping to the ring's start when they do not fit before its end). */
  const makeRoom = (bytes: number) => {
    if (count === capacity) evictOldest()
    if (head + bytes > maxBytes) {
      // The oldest entries lie past the head, up to the ring's end: they go before the wrap.
      while (count > 0 && offsets[oldest]! >= head) evictOldest()
      head = 0
    }
    while (count > 0 && offsets[oldest]! >= head && offsets[oldest]! < head + bytes) evictOldest()
  }
  const forget = (id: string) => {
    const slot = slots.get(id)
    if (slot === undefined) return
    slots.delete(id)
    ids[slot] = undefined
  }
  const remember = (id: string, stored: Stored) => {
    const receiptJson = JSON.stringify(stored.receipt)
    const bytes =
      Buffer.byteLength(stored.fingerprint) + Buffer.byteLength(stored.json) + Buffer.byteLength(receiptJson)
    forget(id)
    if (bytes > maxBytes / 8) return
    makeRoom(bytes)
    ring ??= Buffer.allocUnsafeSlow(maxBytes)
    const slot = (oldest + count) % capacity
    const start = head
    const fingerprintEnd = start + ring.write(stored.fingerprint, start, "utf8")
    const resultEnd = fingerprintEnd + ring.write(stored.json, fingerprintEnd, "utf8")
    const receiptEnd = resultEnd + ring.write(receiptJson, resultEnd, "utf8")
    offsets[slot] = start
    fingerprintEnds[slot] = fingerprintEnd
    resultEnds[slot] = resultEnd
    answers[slot] = stored.answer ? 1 : 0
    receiptEnds[slot] = receiptEnd
    windows[slot] = stored.replayUntil
    ids[slot] = id
    slots.set(id, slot)
    count++
    head = receiptEnd
  }
  return {
    replay: (accountId, key, now) => {
      const id = `${accountId} ${key}`
      const slot = slots.get(id)
      if (slot === undefined || ring === undefined) return undefined
      if (windows[slot]! <= now) {
        forget(id)
        return undefined
      }
      return {
        fingerprint: ring.toString("utf8", offsets[slot], fingerprintEnds[slot]),
        json: ring.toString("utf8", fingerprintEnds[slot], resultEnds[slot]),
        answer: answers[slot] === 1,
        receipt: JSON.parse(ring.toString("utf8", resultEnds[slot], receiptEnds[slot])) as Receipt,
        replayUntil: windows[slot]!
      }
    },
    remember: (accountId, key, stored) => remember(`${accountId} ${key}`, stored)
  }
}
