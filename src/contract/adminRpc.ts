import { tmpdir } from "node:os"
import { join } from "node:path"
import { Schema } from "effect"
import { Rpc, RpcGroup, RpcMiddleware } from "effect/rpc"
import { plans, platforms } from "../domain/plans.ts"
import { FaultsPatch } from "./faults.ts"

/** The operator surface: the contract shared by the server and the CLI, served at this path. */
export const Faults = Schema.Struct({
  latencyMs: Schema.Struct({ min: Schema.Number, max: Schema.Number }),
  errorRate: Schema.Number,
  outage: Schema.Boolean,
  paused: Schema.Array(Schema.Literals(platforms))
})

export const adminRpcPath = "/admin/rpc"

/**
 * Where the generated operator token lives: `DATA_DIR/admin-token`, or a per-port file in the
 * system temp directory when the store is in memory (there is no data directory to keep it in).
 */
export const adminTokenPath = (dataDir: string, port: number): string =>
  dataDir === ":memory:" ? join(tmpdir(), `svc-admin-token-${port}`) : join(dataDir, "admin-token")

export const Plan = Schema.Literals(plans)
export const Platform = Schema.Literals(platforms)
const AccountId = Schema.NonEmptyString
const Credits = Schema.Int.check(Schema.isGreaterThan(0))

export const Account = Schema.Struct({
  id: Schema.String,
  plan: Plan,
  state: Schema.Literals(["active", "suspended"]),
  email: Schema.NullOr(Schema.String),
  claimed: Schema.Boolean,
  grantCredits: Schema.Number,
  balanceCredits: Schema.Number,
  entitlements: Schema.Array(Platform),
  createdAt: Schema.Number
})

export const AccountReport = Schema.Struct({
  account: Account,
  keys: Schema.Array(Schema.Struct({ id: Schema.String, hint: Schema.String, revoked: Schema.Boolean })),
  free_tier_used_today: Schema.Array(Schema.Struct({ ip: Schema.String, credits: Schema.Number })),
  in_flight: Schema.Number
})

/** The operator switches; `globalDailyFreeCredits` is null when there is no global ceiling. */
export const OperatorSettings = Schema.Struct({
  freeTierOpen: Schema.Boolean,
  globalDailyFreeCredits: Schema.NullOr(Schema.Number),
  livePaused: Schema.Boolean
})

/** One outbox message; `text` is its plain-text body until delivery clears it (times are epoch ms). */
export const OutboxMessage = Schema.Struct({
  id: Schema.String,
  to: Schema.String,
  subject: Schema.String,
  kind: Schema.String,
  created_at: Schema.Number,
  sent_at: Schema.NullOr(Schema.Number),
  attempts: Schema.Number,
  next_attempt_at: Schema.Number,
  last_error: Schema.NullOr(Schema.String),
  text: Schema.NullOr(Schema.String)
})

/** An account's connected apps (OAuth clients it authorised), as `GET /v1/apps` lists them. */
export const AppsReport = Schema.Struct({
  account_id: Schema.String,
  apps: Schema.Array(
    Schema.Struct({
      app_id: Schema.String,
      client_name: Schema.String,
      redirect_host: Schema.String,
      mounts: Schema.Array(Schema.String),
      created_at: Schema.String,
      last_used_at: Schema.NullOr(Schema.String)
    })
  )
})

/** An account's purchases newest first and its subscription (active, else the latest); times are epoch ms. */
export const PurchasesReport = Schema.Struct({
  account_id: Schema.String,
  purchases: Schema.Array(
    Schema.Struct({
      id: Schema.String,
      pack: Schema.String,
      rail: Schema.String,
      payment_ref: Schema.String,
      credits: Schema.Number,
      price_usd_cents: Schema.Number,
      period_end: Schema.NullOr(Schema.Number),
      created_at: Schema.Number,
      payer: Schema.NullOr(Schema.String),
      network: Schema.NullOr(Schema.String),
      transaction_hash: Schema.NullOr(Schema.String)
    })
  ),
  subscription: Schema.NullOr(
    Schema.Struct({
      pack: Schema.String,
      rail: Schema.String,
      status: Schema.Literals(["active", "canceled"]),
      current_period_end: Schema.Number,
      cancel_at_period_end: Schema.Boolean
    })
  )
})

/** A local renewal: `renewed` false when there is no active local subscription or it was set to cancel. */
export const RenewResult = Schema.Struct({
  account_id: Schema.String,
  renewed: Schema.Boolean,
  current_period_end: Schema.NullOr(Schema.Number),
  balance_credits: Schema.Number
})

/** A receipt signing key rotation: the new current key, the one it replaced, and every published kid. */
export const RotatedReceiptKey = Schema.Struct({
  kid: Schema.String,
  previous_kid: Schema.String,
  published: Schema.Array(Schema.String)
})

/** The signing key is RECEIPT_SIGNING_KEY, which only the operator's configuration changes. */
export class ReceiptKeyFixed extends Schema.TaggedError<ReceiptKeyFixed>()("ReceiptKeyFixed", {
  message: Schema.String
}) {}

export class AccountNotFound extends Schema.TaggedError<AccountNotFound>()("AccountNotFound", {
  accountId: Schema.String
}) {}

export class AdminUnauthorized extends Schema.TaggedError<AdminUnauthorized>()("AdminUnauthorized", {
  message: Schema.String
}) {}

/** The store failed; the details stay in the service log. */
export class AdminStoreFailed extends Schema.TaggedError<AdminStoreFailed>()("AdminStoreFailed", {
  message: Schema.String
}) {}

/** Every call needs `Authorization: Bearer <admin token>`. */
export class AdminAuth extends RpcMiddleware.Service<AdminAuth>()("surfaces/rpc/AdminAuth", {
  error: AdminUnauthorized
}) {}

const accountError = Schema.Union([AccountNotFound, AdminStoreFailed])
const onAccount = <const Tag extends string, Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields) =>
  Rpc.make(tag, { payload: { accountId: AccountId, ...fields }, success: Account, error: accountError })

export class AdminRpcs extends RpcGroup.make(
  Rpc.make("account", { payload: { accountId: AccountId }, success: AccountReport, error: accountError }),
  onAccount("credit", {
    credits: Credits,
    kind: Schema.Literals(["balance", "grant"]),
    reason: Schema.optionalKey(Schema.String)
  }),
  onAccount("plan", { plan: Plan }),
  onAccount("entitle", { platforms: Schema.NonEmptyArray(Platform) }),
  onAccount("suspend", {}),
  onAccount("unsuspend", {}),
  Rpc.make("freeTier", {
    payload: {
      open: Schema.Boolean,
      globalDailyCredits: Schema.optionalKey(
        Schema.NullOr(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))
      )
    },
    success: OperatorSettings,
    error: AdminStoreFailed
  }),
  Rpc.make("live", {
    payload: { paused: Schema.Boolean },
    success: OperatorSettings,
    error: AdminStoreFailed
  }),
  Rpc.make("outbox", {
    payload: {
      email: Schema.optionalKey(Schema.String),
      limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 })))
    },
    success: Schema.Array(OutboxMessage),
    error: AdminStoreFailed
  }),
  Rpc.make("purchases", { payload: { accountId: AccountId }, success: PurchasesReport, error: accountError }),
  Rpc.make("renew", { payload: { accountId: AccountId }, success: RenewResult, error: accountError }),
  Rpc.make("apps", { payload: { accountId: AccountId }, success: AppsReport, error: accountError }),
  Rpc.make("rotateReceiptKey", {
    success: RotatedReceiptKey,
    error: Schema.Union([ReceiptKeyFixed, AdminStoreFailed])
  }),
  // The simulated world's fault knobs (an HTTP provider has its own, at its /faults).
  Rpc.make("upstream", { payload: FaultsPatch, success: Faults })
).middleware(AdminAuth) {}
