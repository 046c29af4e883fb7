import { randomBytes } from "node:crypto"
import { Context, Effect, Layer } from "effect"
import { encodeBase62 } from "../domain/secrets.ts"

/** Randomness for identifiers and secrets; the test layer is deterministic for ids (secrets stay random). */
export class Ids extends Context.Service<
  Ids,
  {
    readonly newId: (prefix: string) => Effect.Effect<string>
    readonly secretBytes: Effect.Effect<Uint8Array>
  }
>()("app/Ids") {
  static readonly layer = Layer.succeed(
    Ids,
    Ids.of({
      newId: (prefix) => Effect.sync(() => `${prefix}_${encodeBase62(randomBytes(24)).slice(0, 20)}`),
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
