import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { x402MaxCredits } from "../domain/plans.ts"
import { PlainInput } from "./middleware.ts"
import { errorsOf } from "./problemSchemas.ts"
import { documentX402 } from "./x402Headers.ts"

/** Checkout: buying a pack on a payment rail. */

const Timestamp = Schema.String.annotate({
  description: "RFC 3339 time, UTC.",
  examples: ["2026-11-24T15:00:00.000Z"]
})

const SessionId = Schema.String.check(Schema.isMaxLength(64)).annotate({
  description: "The checkout's `session_id` (cs_...), as POST /v1/checkout answered it.",
  examples: ["cs_4fQ9x2LmN7pR1tV8wY3zK6bH0cJ5dG2aS9eF4uI7oP1"]
})

export const CheckoutStarted = Schema.Struct({
  session_id: Schema.String.annotate({
    description:
      "Secret: whoever holds it can read the checkout (and, started without a bearer, the new account's key, once, after payment)."
  }),
  checkout_url: Schema.String.annotate({ description: "Where the payer pays." }),
  rail: Schema.String,
  pack: Schema.Literals(["flex", "production"]),
  mode: Schema.Literals(["one_time", "subscription"]),
  price_usd_cents: Schema.Int,
  currency: Schema.Literal("usd"),
  credits: Schema.optionalKey(Schema.Int),
  credits_per_month: Schema.optionalKey(Schema.Int),
  expires_at: Timestamp
}).annotate({ identifier: "CheckoutStarted" })

export const CheckoutStatus = Schema.Struct({
  session_id: Schema.String,
  status: Schema.Literals(["open", "paid", "expired"]),
  pack: Schema.Literals(["flex", "production"]),
  rail: Schema.String,
  account_id: Schema.optionalKey(Schema.String),
  api_key: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "The new spend key of a checkout started here without a bearer: in the first read after payment only. A checkout started on the `/upgrade` page shows its key on its own page instead, never here."
    })
  )
}).annotate({ identifier: "CheckoutStatus" })

export const X402Purchase = Schema.Struct({
  credits_added: Schema.Int,
  balance_credits: Schema.Int.annotate({
    description: "The account's purchased balance after the purchase."
  }),
  plan: Schema.String.annotate({ description: "A trial account that buys becomes `flex`." }),
  transaction: Schema.String.annotate({
    description: "The settling transaction's hash on the payment's chain."
  })
}).annotate({ identifier: "X402Purchase" })

export const BillingGroup = HttpApiGroup.make("billing", { topLevel: true })
  .annotate(
    OpenApi.Description,
    "Buy a pack: checkout on a payment rail. The key keeps working; no reconfiguration."
  )
  .add(
    HttpApiEndpoint.post("startCheckout", "/checkout", {
      payload: Schema.Struct({
        pack: Schema.String.check(Schema.isMaxLength(32)).annotate({
          description: "`flex` (one-time) or `production` (monthly subscription).",
          examples: ["flex"]
        }),
        rail: Schema.optionalKey(
          Schema.String.check(Schema.isMaxLength(32)).annotate({
            description:
              "A rail the offers list (`local`, and `stripe` when configured); the first by default.",
            examples: ["local"]
          })
        ),
        account_id: Schema.optionalKey(
          Schema.String.annotate({ description: "With a management token governing several accounts." })
        )
      }),
      success: CheckoutStarted,
      error: errorsOf(
        "INVALID_INPUT",
        "UNAUTHORIZED",
        "AUTH_REQUIRED",
        "RATE_LIMITED",
        "UPSTREAM_UNAVAILABLE",
        "PAYLOAD_TOO_LARGE",
        "INTERNAL"
      )
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Start a checkout",
        description:
          "With a spend key (the pack credits that key's account), a management token (+ `account_id` when it governs several) or no bearer at all (a new account; its key is handed to this caller, once, by `GET /v1/checkout/{session_id}` after payment, and never shown on the payment pages). Checkouts started per hour are limited per client IP without a bearer and per account with one: `RATE_LIMITED` past the limit, and nothing is started."
      })
    ),
    HttpApiEndpoint.post("buyCreditsX402", "/credits/x402", {
      payload: Schema.Struct({
        credits: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: x402MaxCredits })).annotate({
          description: "The credits to buy; at least the rail's minimum (X402_MIN_CREDITS, 500 by default).",
          examples: [500]
        })
      }),
      headers: Schema.Struct({
        "payment-signature": Schema.optionalKey(
          Schema.String.annotate({
            description:
              "x402 (protocol v2): the base64 JSON payment for the `PAYMENT-REQUIRED` this route answered. Without it the route answers 402 with `PAYMENT-REQUIRED`."
          })
        )
      }),
      success: X402Purchase,
      error: errorsOf(
        "INVALID_INPUT",
        "KEY_REQUIRED",
        "UNAUTHORIZED",
        "NOT_FOUND",
        "INSUFFICIENT_CREDITS",
        "UPSTREAM_UNAVAILABLE",
        "PAYLOAD_TOO_LARGE",
        "INTERNAL"
      )
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Buy credits with x402",
          description:
            "An agent pays for its own credits with x402 (protocol v2, the EIP-3009 `exact` scheme), with any spend key, a trial key included (its account becomes `flex`). Without `PAYMENT-SIGNATURE`: `402 INSUFFICIENT_CREDITS` whose `PAYMENT-REQUIRED` header (and `offer.x402`) is the payment for `credits`. With it: the payment is verified, settled on-chain and credited once (an authorization credits once, however often it is sent), and the answer carries `PAYMENT-RESPONSE`. A refused payment (replayed, wrong amount, network, asset or payee, expired, a payer without the funds) is `402 INSUFFICIENT_CREDITS` with the `reason`; a facilitator or chain that does not answer is `UPSTREAM_UNAVAILABLE`; either way nothing is credited. `NOT_FOUND` where the rail is not offered."
        })
      )
      .annotate(OpenApi.Transform, documentX402),
    HttpApiEndpoint.get("getCheckout", "/checkout/:session_id", {
      params: { session_id: SessionId },
      success: CheckoutStatus,
      error: errorsOf("NOT_FOUND", "INVALID_INPUT", "INTERNAL")
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Read a checkout",
        description:
          "No authentication: the session id is unguessable. After payment of a checkout started through `POST /v1/checkout` without a bearer, the first read carries the new `api_key`, exactly once (a checkout started on the `/upgrade` page shows its key on its page instead)."
      })
    )
  )
  .middleware(PlainInput)
