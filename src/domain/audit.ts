/** The audit log's vocabulary: what it records and who may have made a change. */

/** What the audit log records: each change to an account that its owner may want to trace. */
export const auditActions = [
  "signed_in",
  "token.revoked",
  "key.created",
  "key.updated",
  "key.rotated",
  "key.revoked",
  "child_key.created",
  "child_key.revoked",
  "child_key.updated",
  "account.rekeyed",
  "alert.set",
  "credits.purchased",
  "subscription.renewed",
  "subscription.ended",
  "app.connected",
  "app.revoked",
  "webhook.created",
  "webhook.deleted",
  "topup.armed",
  "topup.disarmed",
  "topup.succeeded",
  "operator.credit",
  "operator.plan",
  "operator.entitle",
  "operator.suspend",
  "operator.reinstate"
] as const
export type AuditAction = (typeof auditActions)[number]

/**
 * Who made a change: a signed-in email (a management token or a browser sign-in), a spend key (child
 * keys), a connected app (OAuth), the operator, or the service itself (a renewal, an automatic top-up).
 */
export const actorKinds = ["email", "key", "app", "operator", "service"] as const
export interface AuditActor {
  readonly kind: (typeof actorKinds)[number]
  readonly id: string
}
