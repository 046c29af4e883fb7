import { Schema } from "effect"

/**
 * x402's HTTP headers (protocol v2): `PAYMENT-REQUIRED`, `PAYMENT-SIGNATURE` and
 * `PAYMENT-RESPONSE`, each a JSON object in base64. Read and written here without loading the
 * library, so a service without the rail loads none of it.
 */
export const encodeX402Header = (value: unknown): string =>
  Buffer.from(JSON.stringify(value), "utf8").toString("base64")

const Accepted = Schema.Struct({
  scheme: Schema.String,
  network: Schema.String,
  amount: Schema.String,
  asset: Schema.String,
  payTo: Schema.String,
  maxTimeoutSeconds: Schema.Number,
  extra: Schema.Record(Schema.String, Schema.Unknown)
})

/** The `exact` scheme's payload: an EIP-3009 authorization signed for one of our requirements. */
export const X402ExactPayload = Schema.Struct({
  x402Version: Schema.Literal(2),
  resource: Schema.optionalKey(Schema.Unknown),
  accepted: Accepted,
  payload: Schema.Struct({
    signature: Schema.String,
    authorization: Schema.Struct({
      from: Schema.String,
      to: Schema.String,
      value: Schema.String,
      validAfter: Schema.String,
      validBefore: Schema.String,
      nonce: Schema.String
    })
  }),
  extensions: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})
export type X402ExactPayload = typeof X402ExactPayload.Type

/**
 * The `upto` scheme's payload: a Permit2 transfer of at most `permitted.amount`, to the witness's
 * `to`, that only the witness's `facilitator` may settle, through x402's upto proxy (`spender`).
 */
export const X402UptoPayload = Schema.Struct({
  x402Version: Schema.Literal(2),
  resource: Schema.optionalKey(Schema.Unknown),
  accepted: Accepted,
  payload: Schema.Struct({
    signature: Schema.String,
    permit2Authorization: Schema.Struct({
      from: Schema.String,
      permitted: Schema.Struct({ token: Schema.String, amount: Schema.String }),
      spender: Schema.String,
      nonce: Schema.String,
      deadline: Schema.String,
      witness: Schema.Struct({ to: Schema.String, facilitator: Schema.String, validAfter: Schema.String })
    })
  }),
  extensions: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})
export type X402UptoPayload = typeof X402UptoPayload.Type

/** The client's `PAYMENT-SIGNATURE`: a payment in one of the two schemes we offer. */
export const X402PaymentPayload = Schema.Union([X402ExactPayload, X402UptoPayload])
export type X402PaymentPayload = typeof X402PaymentPayload.Type

/** Whether a payment is the `upto` scheme's (a Permit2 authorization). */
export const isUptoPayment = (payment: X402PaymentPayload): payment is X402UptoPayload =>
  "permit2Authorization" in payment.payload

const decodePayload = Schema.decodeUnknownOption(X402PaymentPayload)

/** A `PAYMENT-SIGNATURE` header's payload, or undefined when it is not base64 JSON of that shape. */
export const decodePaymentSignature = (header: string): X402PaymentPayload | undefined => {
  if (header.length > 16_384 || !/^[A-Za-z0-9+/=_-]+$/.test(header.trim())) return undefined
  try {
    const decoded = decodePayload(JSON.parse(Buffer.from(header.trim(), "base64").toString("utf8")))
    return decoded._tag === "Some" ? decoded.value : undefined
  } catch {
    return undefined
  }
}
