import { randomBytes } from "node:crypto"
import { Context, Effect, Layer } from "effect"

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/**
 * An id's body after its prefix: `timeDigits` hex digits of the creation time (ms since the epoch;
 * 11 reach the year 2527), then `randomChars` random base62 characters (83 bits, drawn anew for
 * every id).
 */
export const idForm = { timeDigits: 11, randomChars: 14 } as const
const idLength = idForm.timeDigits + idForm.randomChars

/**
 * An id's body: its creation time in fixed-width lowercase hex, then its random base62 characters
 * drawn from a pool of random bytes refilled 4 KiB at a time (one system call per couple of
 * hundred ids instead of one each); bytes of 248 and more are skipped so every character is
 * equally likely. Ids sort by the time they were made (lowercase hex sorts the same bytewise, as
 * PGlite's `C` collation compares, and under the usual language collations), so a table's
 * primary key grows at its end, as a sequence's would: an insert touches the index's last pages
 * rather than a random one of a ledger's million, which the store's buffers would hold only by
 * chance (docs/performance.md, round 16).
 */
export const idBody = (() => {
  let pool = randomBytes(4096)
  let at = 0
  return (now: number) => {
    let id = now.toString(16).padStart(idForm.timeDigits, "0")
    while (id.length < idLength) {
      if (at === pool.length) {
        pool = randomBytes(4096)
        at = 0
      }
      const byte = pool[at++]!
      if (byte < 248) id += alphabet[byte % 62]
    }
    return id
  }
})()

/** Randomness for identifiers and secrets; the test layer is deterministic for ids (secrets stay random). */
export class Ids extends Context.Service<
  Ids,
  {
    readonly newId: (prefix: string) => Effect.Effect<string>
    readonly secretBytes: Effect.Effect<Uint8Array>
  }
>()("services/Ids") {
  static readonly layer = Layer.succeed(
    Ids,
    Ids.of({
      newId: (prefix) => Effect.sync(() => `${prefix}_${idBody(Date.now())}`),
      secretBytes: Effect.sync(() => randomBytes(48))
    })
  )

  /**
   * Ids counted per prefix from 1 (`rcpt_test000001`, `rcpt_test000002`, `acct_test000001`); the
   * counters live in the layer, so each build starts afresh. After the prefix's `_` they are
   * alphanumeric like real ids, so whatever parses a real id (a receipts cursor) parses these.
   * Secrets stay random: no test asserts one.
   */
  static readonly layerTest = Layer.sync(Ids, () => {
    const counters = new Map<string, number>()
    return Ids.of({
      newId: (prefix) =>
        Effect.sync(() => {
          const n = (counters.get(prefix) ?? 0) + 1
          counters.set(prefix, n)
          return `${prefix}_test${String(n).padStart(6, "0")}`
        }),
      secretBytes: Effect.sync(() => randomBytes(48))
    })
  })
}
