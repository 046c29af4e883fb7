/**
 * x402's headers (protocol v2) as the OpenAPI document states them, on every route that takes a
 * payment (the data operations and `POST /v1/credits/x402`): `PAYMENT-SIGNATURE` in the request,
 * `PAYMENT-REQUIRED` on the 402 and `PAYMENT-RESPONSE` on the 200. Documented whatever the
 * configuration: the contract is the same whether or not this service offers the rail (where it
 * does not, a 402 carries no `PAYMENT-REQUIRED` and the header is ignored).
 */
const base64Json = { type: "string", contentEncoding: "base64" } as const

export const paymentSignatureDescription =
  "x402 (protocol v2): the base64 JSON payment for the `PAYMENT-REQUIRED` a 402 carried; sent with the same Idempotency-Key on a data call. Ignored where the x402 rail is not offered."

const paymentRequired = {
  "PAYMENT-REQUIRED": {
    description:
      "Where the x402 rail is offered: x402's `PaymentRequired` (protocol v2) in base64 JSON, the same object as `offer.x402`. Pay one of its `accepts` and retry with `PAYMENT-SIGNATURE`: the `exact` payment (EIP-3009) and, on a data call where the operator offers it, the `upto` one (a Permit2 authorization of at most the call's `max_credits`, of which only what the call lacks is settled).",
    schema: base64Json
  }
} as const

const paymentResponse = {
  "PAYMENT-RESPONSE": {
    description:
      "When the request paid with `PAYMENT-SIGNATURE`: x402's settlement (`success`, `transaction`, `network`, `payer`) in base64 JSON.",
    schema: base64Json
  }
} as const

type Responses = Record<string, Record<string, unknown>>

/** The responses with x402's headers: `PAYMENT-REQUIRED` on the 402, `PAYMENT-RESPONSE` on the 200. */
export const withX402Headers = (responses: Responses): Responses =>
  Object.fromEntries(
    Object.entries(responses).map(([status, response]) => {
      const added = status === "402" ? paymentRequired : status === "200" ? paymentResponse : undefined
      if (added === undefined) return [status, response]
      const headers = (response.headers as Record<string, unknown> | undefined) ?? {}
      return [status, { ...response, headers: { ...headers, ...added } }]
    })
  )

type Parameter = { readonly in?: string; readonly name?: string }

/** The request header by its protocol's name (the schema declares headers lower case). */
export const namePaymentSignature = <P extends Parameter>(parameter: P): P =>
  parameter.in === "header" && parameter.name === "payment-signature"
    ? { ...parameter, name: "PAYMENT-SIGNATURE" }
    : parameter

/** An operation's OpenAPI object with x402's headers (an `OpenApi.Transform`). */
export const documentX402 = (spec: Record<string, unknown>): Record<string, unknown> => ({
  ...spec,
  ...(spec.parameters === undefined
    ? {}
    : { parameters: (spec.parameters as ReadonlyArray<Parameter>).map(namePaymentSignature) }),
  responses: withX402Headers((spec.responses ?? {}) as Responses)
})
