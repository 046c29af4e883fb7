import { randomBytes } from "node:crypto"
import { Context, Effect, Layer } from "effect"

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/**
 * 20 random base62 characters, drawn from a pool of random bytes refilled 4 KiB at a time (one
 * system call per couple of hundred ids instead of one each); bytes of 248 and more are skipped so
 * every character is equally likely.
 */
const randomId = (() => {
  let pool = randomBytes(4096)
  let at = 0
  return () => {
    let id = ""
    while (id.length < 20) {
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
      newId: (prefix) => Effect.sync(() => `${prefix}_${randomId()}`),
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
