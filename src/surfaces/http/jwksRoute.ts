import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { ReceiptSigner } from "../../metering/ReceiptSigner.ts"

/** Where the receipt signing keys are published. */
export const jwksPath = "/.well-known/jwks.json"

/**
 * `GET /.well-known/jwks.json`: the public keys of every receipt signing key, current and earlier
 * (newest first). Public and cacheable for five minutes: a verifier that meets a `kid` it does not
 * have fetches the set again.
 */
export const JwksRoute = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const signer = yield* ReceiptSigner
    yield* router.add(
      "GET",
      jwksPath,
      Effect.map(Effect.orDie(signer.jwks), (jwks) =>
        HttpServerResponse.jsonUnsafe(jwks, {
          contentType: "application/jwk-set+json",
          headers: { "cache-control": "public, max-age=300", "access-control-allow-origin": "*" }
        })
      )
    )
  })
)
