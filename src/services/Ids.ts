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
}
