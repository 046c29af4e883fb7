import { type Context, Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { actorKinds, auditActions } from "../domain/audit.ts"
import { ManagementAuth } from "./governance.ts"
import { PlainInput } from "./middleware.ts"
import { errorsOf } from "./problemSchemas.ts"

/** The audit log: who changed what on an account (wave 3). */

const described = <E extends { readonly annotateMerge: (annotations: Context.Context<never>) => E }>(
  summary: string,
  description: string,
  endpoint: E
): E => endpoint.annotateMerge(OpenApi.annotations({ summary, description }))

const AccountId = Schema.String.annotate({
  description: "The account to read, when the signed-in email governs several (AUTH_REQUIRED lists them).",
  examples: ["acct_7Yq2mW9xK3pL5nR8tV1c"]
})

export const AuditEventSchema = Schema.Struct({
  event_id: Schema.String.annotate({ examples: ["aud_8pW3mK7xQ2nL5rT9vB4c"] }),
  at: Schema.String.annotate({
    description: "When the change was made (RFC 3339, UTC).",
    examples: ["2026-11-25T19:40:12.345Z"]
  }),
  action: Schema.String.annotate({
    description: `What changed: ${auditActions.join(", ")}. More may be added; show an unknown one as it is.`,
    examples: ["key.created"]
  }),
  actor: Schema.Struct({
    kind: Schema.Literals(actorKinds).annotate({
      description:
        "`email` (a sign-in: management token, dashboard, consent page), `key` (a spend key, for its child keys), `app` (a connected app), `operator`, or `service` (a renewal, an automatic top-up, a payment provider's report).",
      examples: ["email"]
    }),
    id: Schema.String.annotate({
      description: "The email, key id, app id; `operator` or `svc`. Never a secret.",
      examples: ["agent-owner@example.com"]
    })
  }),
  target: Schema.NullOr(Schema.String).annotate({
    description:
      "What the change was made to: a key, token, app, webhook, purchase or top-up id; the alert's threshold; a plan, platforms or state set by the operator.",
    examples: ["key_3nF8qL2wX9mK4pR7tV1z"]
  }),
  ip: Schema.NullOr(Schema.String).annotate({
    description:
      "The client's address as the service counts it (an IPv6 client's network); null for changes no request made.",
    examples: ["203.0.113.7"]
  })
}).annotate({ identifier: "AuditEvent" })

export const AuditPageSchema = Schema.Struct({
  account_id: Schema.String,
  events: Schema.Array(AuditEventSchema),
  next_cursor: Schema.NullOr(Schema.String).annotate({
    description: "Pass as `cursor` for older events; null on the last page.",
    examples: ["aud_1k"]
  })
}).annotate({ identifier: "AuditPage" })

/** The query of `GET /v1/audit`, and the arguments of the `list_audit_events` tool. */
export const AuditQuery = Schema.Struct({
  account_id: Schema.optionalKey(AccountId),
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 })).annotate({
      description: "Events per page, 1 to 100 (default 50).",
      examples: [50]
    })
  ),
  cursor: Schema.optionalKey(
    Schema.String.check(Schema.isMaxLength(64)).annotate({
      description: "`next_cursor` of the previous page.",
      examples: ["aud_1k"]
    })
  )
})

const codes = [
  "INVALID_INPUT",
  "AUTH_REQUIRED",
  "UNAUTHORIZED",
  "RATE_LIMITED",
  "PAYLOAD_TOO_LARGE",
  "INTERNAL"
] as const

export const AuditGroup = HttpApiGroup.make("audit", { topLevel: true })
  .annotate(OpenApi.Description, "Who changed what on the account. Management token only.")
  .add(
    described(
      "Read the audit log",
      "The account's changes, newest first: sign-ins, tokens revoked, keys and child keys created, updated, rotated and revoked, recovery, the balance alert, purchases, subscriptions renewed and ended, apps connected and disconnected, webhooks created and deleted, automatic top-ups, and the operator's credits, plans, entitlements and suspensions. Each is written in the same transaction as the change. Never records a secret.",
      HttpApiEndpoint.get("listAuditEvents", "/audit", {
        query: Schema.toCodecStringTree(AuditQuery),
        success: AuditPageSchema,
        error: errorsOf(...codes)
      })
    )
  )
  .middleware(PlainInput)
  .middleware(ManagementAuth)
