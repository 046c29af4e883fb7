import { type Context, Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { webhookEventTypes } from "../domain/webhooks.ts"
import { ManagementAuth } from "./governance.ts"
import { PlainInput } from "./middleware.ts"
import { errorsOf } from "./problemSchemas.ts"
import { ReceiptKeyId } from "./schemas.ts"

/** Webhooks, automatic top-up and the receipts export (wave 3). */

const described = <E extends { readonly annotateMerge: (annotations: Context.Context<never>) => E }>(
  summary: string,
  description: string,
  endpoint: E
): E => endpoint.annotateMerge(OpenApi.annotations({ summary, description }))

const AccountId = Schema.String.annotate({
  description:
    "The account to act on, when the signed-in email governs several (AUTH_REQUIRED lists them). Query or body.",
  examples: ["acct_7Yq2mW9xK3pL5nR8tV1c"]
})
const AccountQuery = Schema.Struct({ account_id: Schema.optionalKey(AccountId) })
const WebhookId = Schema.String.check(Schema.isMaxLength(64)).annotate({
  description: "A webhook id from GET /v1/webhooks (wh_...).",
  examples: ["wh_5mR2kQ8wL3xN7pT1vZ4c"]
})
const Timestamp = Schema.String.annotate({
  description: "RFC 3339 time, UTC.",
  examples: ["2026-11-23T15:00:00.000Z"]
})
const Cents = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 100_000_000 }))

const subscribable = webhookEventTypes.filter((type) => type !== "ping")

const WebhookListing = Schema.Struct({
  webhook_id: Schema.String,
  url: Schema.String,
  events: Schema.Array(Schema.String),
  state: Schema.Literals(["active", "disabled"]),
  created_at: Timestamp,
  failing_since: Schema.NullOr(Timestamp).annotate({
    description: "The first failed attempt since the last success; null while deliveries succeed."
  }),
  disabled_at: Schema.NullOr(Timestamp),
  pending: Schema.Int.annotate({ description: "Deliveries waiting to be sent or retried." })
}).annotate({ identifier: "Webhook" })

const WebhookAttempt = Schema.Struct({
  event_id: Schema.String.annotate({ description: "The event's id: the `webhook-id` of every attempt." }),
  type: Schema.String,
  attempt: Schema.Int,
  status: Schema.Literals(["succeeded", "failed"]),
  attempted_at: Timestamp,
  response_code: Schema.NullOr(Schema.Int),
  response_body: Schema.NullOr(Schema.String).annotate({
    description: "The start of the answer, truncated."
  }),
  error: Schema.NullOr(Schema.String),
  duration_ms: Schema.Int
})

const TopupView = Schema.Struct({
  account_id: Schema.String,
  enabled: Schema.Boolean,
  pack: Schema.NullOr(Schema.String),
  credits: Schema.NullOr(Schema.Int),
  price_usd_cents: Schema.NullOr(Schema.Int),
  below_credits: Schema.NullOr(Schema.Int),
  monthly_max_usd_cents: Schema.NullOr(Schema.Int),
  month: Schema.String.annotate({ description: "The UTC month (YYYY-MM) the maximum counts." }),
  month_spent_usd_cents: Schema.Int.annotate({
    description: "What this month's top-ups (open or paid) cost so far."
  }),
  failures_in_a_row: Schema.Int,
  last_topup: Schema.NullOr(
    Schema.Struct({
      topup_id: Schema.String,
      state: Schema.Literals(["pending", "charging", "succeeded", "failed"]),
      rail: Schema.NullOr(Schema.String),
      credits: Schema.Int,
      price_usd_cents: Schema.Int,
      created_at: Timestamp,
      settled_at: Schema.NullOr(Timestamp),
      error: Schema.NullOr(Schema.String)
    })
  )
}).annotate({ identifier: "Topup" })

const codes = ["INVALID_INPUT", "AUTH_REQUIRED", "UNAUTHORIZED", "PAYLOAD_TOO_LARGE", "INTERNAL"] as const

export const WebhooksGroup = HttpApiGroup.make("webhooks", { topLevel: true })
  .annotate(
    OpenApi.Description,
    "Webhooks (signed per Standard Webhooks) and automatic top-up. Management token only."
  )
  .add(
    described(
      "List webhooks",
      "The account's webhook endpoints (never their secrets), with the state of their deliveries.",
      HttpApiEndpoint.get("listWebhooks", "/webhooks", {
        query: AccountQuery,
        success: Schema.Struct({ account_id: Schema.String, webhooks: Schema.Array(WebhookListing) }),
        error: errorsOf(...codes)
      })
    ),
    described(
      "Create a webhook",
      `An endpoint for the named events (${subscribable.join(", ")}). The URL must be https:// and resolve only to public addresses, checked now and at every delivery. Every delivery is a POST of \`{ "type", "id", "created_at", "account_id", "data" }\` signed per Standard Webhooks (\`webhook-id\`, \`webhook-timestamp\`, \`webhook-signature\`) with \`secret\`, which this answer shows once. Delivered at least once, with the same \`webhook-id\` on every retry (5 s doubling to 1 h, for 24 h); an endpoint failing for 3 days is disabled and its owner emailed. At most 10 per account.`,
      HttpApiEndpoint.post("createWebhook", "/webhooks", {
        query: AccountQuery,
        payload: Schema.Struct({
          url: Schema.String.check(Schema.isMaxLength(2048)).annotate({
            description: "https://, on a public address.",
            examples: ["https://example.com/hooks/svc"]
          }),
          events: Schema.Array(Schema.String.check(Schema.isMaxLength(64)))
            .check(Schema.isMaxLength(20))
            .annotate({ description: "The events to send.", examples: [["balance.low", "topup.failed"]] }),
          account_id: Schema.optionalKey(AccountId)
        }),
        success: Schema.Struct({
          webhook_id: Schema.String,
          url: Schema.String,
          events: Schema.Array(Schema.String),
          secret: Schema.String.annotate({
            description:
              "`whsec_...`: the signing secret (Standard Webhooks), shown once. Verify each delivery with it."
          }),
          created_at: Timestamp
        }).annotate({ identifier: "CreatedWebhook", httpApiStatus: 201 }),
        error: errorsOf(...codes)
      })
    ),
    described(
      "Delete a webhook",
      "Nothing more is sent to it; its pending deliveries are dropped.",
      HttpApiEndpoint.post("deleteWebhook", "/webhooks/delete", {
        query: AccountQuery,
        payload: Schema.Struct({ webhook_id: WebhookId, account_id: Schema.optionalKey(AccountId) }),
        success: Schema.Struct({ webhook_id: Schema.String, deleted_at: Timestamp }),
        error: errorsOf("NOT_FOUND", ...codes)
      })
    ),
    described(
      "Test a webhook",
      "Queues a `ping` event for the endpoint (subscribed or not); GET /v1/webhooks/{webhook_id}/deliveries shows how it went. A disabled endpoint is enabled again by its test, and one backing off after failures is tried at once. At most 30 tests per account an hour and 5 per endpoint a minute (RATE_LIMITED past them).",
      HttpApiEndpoint.post("testWebhook", "/webhooks/test", {
        query: AccountQuery,
        payload: Schema.Struct({ webhook_id: WebhookId, account_id: Schema.optionalKey(AccountId) }),
        success: Schema.Struct({
          webhook_id: Schema.String,
          event_id: Schema.String,
          type: Schema.Literal("ping")
        }).annotate({ identifier: "WebhookTest", httpApiStatus: 202 }),
        error: errorsOf("NOT_FOUND", "RATE_LIMITED", ...codes)
      })
    ),
    described(
      "List a webhook's deliveries",
      "Its delivery attempts, newest first (status, time, response code, the start of the answer), and the deliveries waiting to be sent or retried.",
      HttpApiEndpoint.get("listWebhookDeliveries", "/webhooks/:webhook_id/deliveries", {
        params: { webhook_id: WebhookId },
        query: Schema.toCodecStringTree(
          Schema.Struct({
            account_id: Schema.optionalKey(AccountId),
            limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 })))
          })
        ),
        success: Schema.Struct({
          webhook_id: Schema.String,
          attempts: Schema.Array(WebhookAttempt),
          pending: Schema.Array(
            Schema.Struct({
              event_id: Schema.String,
              type: Schema.String,
              attempts: Schema.Int,
              next_attempt_at: Timestamp
            })
          )
        }),
        error: errorsOf("NOT_FOUND", ...codes)
      })
    ),
    described(
      "Read automatic top-up",
      "Whether it is armed, its line and monthly maximum, this month's spend and the last top-up.",
      HttpApiEndpoint.get("getTopup", "/topup", {
        query: AccountQuery,
        success: TopupView,
        error: errorsOf(...codes)
      })
    ),
    described(
      "Arm or disarm automatic top-up",
      "`{ pack, below_credits, monthly_max_usd_cents }` arms it: when a charge leaves the spendable credits (grant plus balance) below `below_credits`, one pack is bought, never two at once and never past `monthly_max_usd_cents` in a UTC month. The local rail pays at once (test mode); Stripe charges the payment method an earlier checkout saved, off-session, and credits it when its webhook reports it paid. Three failures in a row disarm it and email the owner. `{ enabled: false }` disarms it.",
      HttpApiEndpoint.post("setTopup", "/topup", {
        query: AccountQuery,
        payload: Schema.Struct({
          enabled: Schema.optionalKey(
            Schema.Boolean.annotate({ description: "false disarms; omitted or true arms." })
          ),
          pack: Schema.optionalKey(
            Schema.String.check(Schema.isMaxLength(32)).annotate({
              description: "A one-time pack (`flex`, the default).",
              examples: ["flex"]
            })
          ),
          below_credits: Schema.optionalKey(
            Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })).annotate({
              description: "The line: a charge that leaves fewer spendable credits buys a pack.",
              examples: [2000]
            })
          ),
          monthly_max_usd_cents: Schema.optionalKey(
            Cents.annotate({ description: "The most top-ups may cost in a UTC month.", examples: [6000] })
          ),
          account_id: Schema.optionalKey(AccountId)
        }),
        success: TopupView,
        error: errorsOf(...codes)
      })
    )
  )
  .middleware(PlainInput)
  .middleware(ManagementAuth)

const Day = Schema.String.check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}$/)).annotate({
  description: "A UTC day, YYYY-MM-DD.",
  examples: ["2026-11-01"]
})

export const ExportGroup = HttpApiGroup.make("export", { topLevel: true })
  .annotate(OpenApi.Description, "Every receipt of a range, as a file. Free.")
  .add(
    described(
      "Export receipts",
      "Every receipt from `from` to `to` (UTC days, both included, at most 366 days), oldest first, streamed: CSV (cells that a spreadsheet would read as a formula are prefixed with ') or JSON Lines (one receipt a line, as GET /v1/receipts/{id} answers). A spend key exports its own account (a child key: its own calls); a management token the account it governs (`account_id` when several); `key_id` narrows the export to one key's receipts.",
      HttpApiEndpoint.get("exportReceipts", "/receipts/export", {
        query: Schema.Struct({
          from: Day,
          to: Day,
          format: Schema.optionalKey(
            Schema.Literals(["csv", "jsonl"]).annotate({ description: "csv (the default) or jsonl." })
          ),
          account_id: Schema.optionalKey(AccountId),
          key_id: Schema.optionalKey(ReceiptKeyId)
        }),
        success: HttpApiSchema.StreamUint8Array({ contentType: ["text/csv", "application/x-ndjson"] }),
        error: errorsOf(
          "INVALID_INPUT",
          "KEY_REQUIRED",
          "AUTH_REQUIRED",
          "UNAUTHORIZED",
          "RATE_LIMITED",
          "INTERNAL"
        )
      })
    )
  )
  .middleware(PlainInput)
