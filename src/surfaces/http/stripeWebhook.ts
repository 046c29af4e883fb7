import { ByteSize, Clock, Effect, Option, Redacted } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { AppConfig } from "../../config.ts"
import { InvalidInput } from "../../contract/errors.ts"
import { stripeEvents } from "../../payments/rails.ts"
import { makeStripeClient } from "../../payments/StripeRail.ts"
import { announcedBodyTooLarge, bodyTooLarge } from "../common/limits.ts"
import { Problems } from "../common/problems.ts"

const isBodyTooLarge = (error: unknown) =>
  typeof error === "object" &&
  error !== null &&
  "reason" in error &&
  (error.reason as { readonly reason?: string } | undefined)?.reason === "BodyTooLarge"

const badSignature = (detail: string) =>
  new InvalidInput({
    message: `The Stripe-Signature header does not verify this body with the webhook secret (${detail}); nothing was applied.`,
    param: "Stripe-Signature"
  })

/**
 * `POST /v1/webhooks/stripe`, only when Stripe is configured: the raw body, verified with the
 * webhook secret (a bad signature, a changed body or an old timestamp is INVALID_INPUT and changes
 * nothing), then applied once per event id. A failure to apply is a 500, which Stripe retries.
 */
export const StripeWebhookRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (Option.isNone(config.stripe)) return
    const secret = config.stripe.value.webhookSecret
    const { webhooks } = yield* makeStripeClient(config.stripe.value)
    const problems = yield* Problems
    const events = yield* stripeEvents
    const limit = ByteSize.bytes(config.maxBodyBytes)

    yield* router.add(
      "POST",
      "/v1/webhooks/stripe",
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const announced = announcedBodyTooLarge(request.headers, config.maxBodyBytes)
        if (announced !== undefined) return problems.render(announced)
        // The signature covers the exact bytes Stripe sent: never parse and re-serialise first.
        const read = yield* request.text.pipe(
          Effect.provideService(HttpIncomingMessage.MaxBodySize, limit),
          Effect.result
        )
        if (read._tag === "Failure")
          return problems.render(
            isBodyTooLarge(read.failure)
              ? bodyTooLarge(config.maxBodyBytes)
              : new InvalidInput({ message: "The request body could not be read." })
          )
        const header = request.headers["stripe-signature"]
        if (header === undefined) return problems.render(badSignature("the header is missing"))
        const now = yield* Clock.currentTimeMillis
        const verified = yield* Effect.try({
          try: () =>
            webhooks.constructEvent(read.success, header, Redacted.value(secret), undefined, undefined, now),
          catch: (cause) => badSignature(cause instanceof Error ? cause.message : "unverifiable")
        }).pipe(Effect.result)
        if (verified._tag === "Failure") return problems.render(verified.failure)
        const event = verified.success
        // A store failure is a 500 (INTERNAL): nothing was recorded, and Stripe retries the delivery.
        const outcome = yield* Effect.orDie(events.apply(event))
        return HttpServerResponse.jsonUnsafe({
          received: true,
          id: event.id,
          duplicate: outcome === "duplicate"
        })
      })
    )
  })
)
