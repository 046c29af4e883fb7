import { createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto"
import { Effect } from "effect"
import { type CryptoKey, calculateJwkThumbprint, importJWK } from "jose"
import { receiptSignatureAlg } from "../contract/receiptSignature.ts"

/** A key's public half as `GET /.well-known/jwks.json` publishes it. */
export interface PublicJwk {
  readonly kty: "OKP"
  readonly crv: "Ed25519"
  readonly x: string
  readonly kid: string
  readonly alg: typeof receiptSignatureAlg
  readonly use: "sig"
}

/**
 * A receipt signing key. Its private half is a non-extractable `CryptoKey`: once loaded, nothing in
 * the process can read it back out (not a log line, not an error, not the JWKS).
 */
export interface SigningKey {
  readonly kid: string
  readonly publicJwk: PublicJwk
  readonly privateKey: CryptoKey
}

/** Only the public members of a JWK, whatever else the object holds. */
export const publicOnly = (jwk: { readonly x: string; readonly kid: string }): PublicJwk => ({
  kty: "OKP",
  crv: "Ed25519",
  x: jwk.x,
  kid: jwk.kid,
  alg: receiptSignatureAlg,
  use: "sig"
})

/** A new Ed25519 private key as JWK text: what is kept in the file or the database. */
export const newPrivateJwk = (): string =>
  JSON.stringify(generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }))

/**
 * A signing key from a private JWK's text (RECEIPT_SIGNING_KEY, the key file, a database row). Its
 * public half is derived from the private one, not taken from the text; the kid is the RFC 7638
 * thumbprint of that public half. Anything else dies naming `from`, never echoing the text.
 */
export const signingKeyOf = (text: string, from: string): Effect.Effect<SigningKey> =>
  Effect.tryPromise({
    try: async () => {
      const jwk = JSON.parse(text) as { readonly kty?: unknown; readonly crv?: unknown; readonly d?: unknown }
      if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.d !== "string") throw new Error()
      const derived = createPublicKey(
        createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", d: jwk.d, x: "" }, format: "jwk" })
      ).export({ format: "jwk" })
      const x = derived.x
      if (typeof x !== "string") throw new Error()
      const kid = await calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x })
      const privateKey = (await importJWK({ kty: "OKP", crv: "Ed25519", x, d: jwk.d }, receiptSignatureAlg, {
        extractable: false
      })) as CryptoKey
      return { kid, publicJwk: publicOnly({ x, kid }), privateKey }
    },
    // The cause would carry the text: only where it came from is said.
    catch: () =>
      new Error(
        `${from} is not an Ed25519 private JWK ({"kty":"OKP","crv":"Ed25519","d":...,"x":...}); make one with: node -e "console.log(JSON.stringify(require('node:crypto').generateKeyPairSync('ed25519').privateKey.export({format:'jwk'})))"`
      )
  }).pipe(Effect.orDie)
