import canonicalize from "canonicalize"

/**
 * What a receipt's `signature` signs, stated once for the signer and every verifier: a compact JWS
 * (`EdDSA` with an Ed25519 key named by `kid` in its protected header) whose payload is the RFC 8785
 * canonical JSON of the receipt as served, without `signature`. Every member the receipt carries is
 * covered, whichever fields it gains later.
 */
export const receiptSignatureAlg = "EdDSA"

/** The receipt without its `signature`, whatever else it holds. */
export const unsignedReceipt = (receipt: object): Record<string, unknown> => {
  const { signature: _, ...rest } = receipt as Record<string, unknown>
  return rest
}

/** The bytes a receipt's signature signs: the canonical JSON (RFC 8785) of the receipt without `signature`. */
export const receiptPayload = (receipt: object): string => {
  const text = canonicalize(unsignedReceipt(receipt))
  if (text === undefined) throw new Error("a receipt has a JSON form")
  return text
}

/** The RFC 7240 preference that asks a data answer for its receipt's signature. */
export const receiptSignaturePreference = "receipt-signature"

/** The `_meta` member of an MCP `tools/call` that asks the same (`true`). */
export const receiptSignatureMetaKey = "svc/receipt-signature"

/** Whether a `Prefer` header (RFC 7240: preferences separated by commas, each maybe with `=value` and `;` parameters) asks for it. */
export const prefersReceiptSignature = (prefer: string | undefined): boolean =>
  prefer
    ?.split(",")
    .some(
      (preference) =>
        preference.split(";")[0]!.split("=")[0]!.trim().toLowerCase() === receiptSignaturePreference
    ) === true
