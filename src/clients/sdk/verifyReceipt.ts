import { compactVerify, createLocalJWKSet, decodeProtectedHeader, errors, type JSONWebKeySet } from "jose"
import { receiptPayload, receiptSignatureAlg } from "../../contract/receiptSignature.ts"

/** Why a receipt does not verify. */
export type ReceiptRejection =
  /** It carries no `signature`. */
  | "unsigned"
  /** Its `signature` is not a compact EdDSA JWS with a `kid`. */
  | "malformed"
  /** No key of the set has its `kid` (a key set fetched before a rotation, or a foreign signature). */
  | "unknown_key"
  /** The signature does not verify with that key. */
  | "bad_signature"
  /** The signature is sound but signs another receipt: some field was changed, added or removed. */
  | "altered"

export type ReceiptVerification =
  | { readonly valid: true; readonly kid: string }
  | { readonly valid: false; readonly reason: ReceiptRejection; readonly message: string }

const rejected = (reason: ReceiptRejection, message: string): ReceiptVerification => ({
  valid: false,
  reason,
  message
})

const decoder = new TextDecoder()

/**
 * Checks a receipt offline against the service's key set (`GET /.well-known/jwks.json`): its
 * `signature` must verify with the key its `kid` names, and sign exactly this receipt (the RFC 8785
 * canonical JSON of its other members). Never throws for a bad receipt: the answer says why.
 */
export const verifyReceipt = async (receipt: unknown, jwks: JSONWebKeySet): Promise<ReceiptVerification> => {
  if (typeof receipt !== "object" || receipt === null || Array.isArray(receipt))
    return rejected("malformed", "A receipt is a JSON object.")
  const signature = (receipt as { readonly signature?: unknown }).signature
  if (typeof signature !== "string") return rejected("unsigned", "The receipt has no signature.")
  let kid: string
  try {
    const header = decodeProtectedHeader(signature)
    if (header.alg !== receiptSignatureAlg || typeof header.kid !== "string") throw new Error()
    kid = header.kid
  } catch {
    return rejected("malformed", `The signature is not a compact ${receiptSignatureAlg} JWS with a kid.`)
  }
  let payload: string
  try {
    const verified = await compactVerify(signature, createLocalJWKSet(jwks), {
      algorithms: [receiptSignatureAlg]
    })
    payload = decoder.decode(verified.payload)
  } catch (error) {
    if (error instanceof errors.JWKSNoMatchingKey)
      return rejected("unknown_key", `No key ${kid} in the key set; fetch /.well-known/jwks.json again.`)
    if (error instanceof errors.JWSSignatureVerificationFailed)
      return rejected("bad_signature", `The signature does not verify with key ${kid}.`)
    return rejected("malformed", `The signature could not be checked: ${(error as Error).message}`)
  }
  let expected: string
  try {
    expected = receiptPayload(receipt)
  } catch {
    return rejected("malformed", "The receipt has no canonical JSON form.")
  }
  return payload === expected
    ? { valid: true, kid }
    : rejected("altered", "The signature signs another receipt: a field was changed, added or removed.")
}
