import { Effect } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { AccountNotFound, AdminRpcs, AdminStoreFailed, ReceiptKeyFixed } from "../../contract/adminRpc.ts"
import { ReceiptSigner } from "../../metering/ReceiptSigner.ts"
import { OAuthServer } from "../../oauth/OAuthServer.ts"
import { Admin } from "../../operator/Admin.ts"
import type { OperatorSettings } from "../../services/Settings.ts"
import { UpstreamFaults } from "../../upstream/Upstream.ts"

/** A store failure is logged here and reaches the operator as AdminStoreFailed, without its details. */
const storeFailed = (error: SqlError) =>
  Effect.logError("admin RPC: the store failed", error).pipe(
    Effect.andThen(Effect.fail(new AdminStoreFailed({ message: "The store failed; see the service log." })))
  )

const found =
  (accountId: string) =>
  <A>(effect: Effect.Effect<A | undefined, SqlError>): Effect.Effect<A, AccountNotFound | AdminStoreFailed> =>
    effect.pipe(
      Effect.catch(storeFailed),
      Effect.flatMap((value) =>
        value === undefined ? Effect.fail(new AccountNotFound({ accountId })) : Effect.succeed(value)
      )
    )

const toWire = (settings: OperatorSettings) => ({
  ...settings,
  globalDailyFreeCredits: settings.globalDailyFreeCredits ?? null
})

/** How many outbox messages `outbox` lists when not told. */
const defaultOutboxLimit = 20

/** Each procedure is one call of the Admin service. */
export const AdminHandlers = AdminRpcs.toLayer(
  Effect.gen(function* () {
    const admin = yield* Admin
    const oauth = yield* OAuthServer
    const faults = yield* UpstreamFaults
    const signer = yield* ReceiptSigner
    return AdminRpcs.of({
      rotateReceiptKey: () =>
        signer.rotate.pipe(
          Effect.catchTag("SqlError", storeFailed),
          Effect.catchTag("RotationRefused", ({ message }) => Effect.fail(new ReceiptKeyFixed({ message })))
        ),
      upstream: (patch) => faults.set(patch),
      account: ({ accountId }) => admin.account(accountId).pipe(found(accountId)),
      credit: ({ accountId, credits, kind, reason }) =>
        admin.credit(accountId, credits, kind, reason ?? "operator").pipe(found(accountId)),
      plan: ({ accountId, plan }) => admin.setPlan(accountId, plan).pipe(found(accountId)),
      entitle: ({ accountId, platforms }) => admin.entitle(accountId, platforms).pipe(found(accountId)),
      suspend: ({ accountId }) => admin.setState(accountId, "suspended").pipe(found(accountId)),
      unsuspend: ({ accountId }) => admin.setState(accountId, "active").pipe(found(accountId)),
      freeTier: ({ open, globalDailyCredits }) =>
        admin
          .settings({
            freeTierOpen: open,
            ...(globalDailyCredits === undefined
              ? {}
              : { globalDailyFreeCredits: globalDailyCredits ?? undefined })
          })
          .pipe(Effect.map(toWire), Effect.catch(storeFailed)),
      live: ({ paused }) =>
        admin.settings({ livePaused: paused }).pipe(Effect.map(toWire), Effect.catch(storeFailed)),
      outbox: ({ email, limit }) =>
        admin.outbox({ email, limit: limit ?? defaultOutboxLimit }).pipe(Effect.catch(storeFailed)),
      purchases: ({ accountId }) => admin.purchases(accountId).pipe(found(accountId)),
      renew: ({ accountId }) => admin.renew(accountId).pipe(found(accountId)),
      apps: ({ accountId }) =>
        admin.account(accountId).pipe(
          Effect.flatMap((account) =>
            account === undefined
              ? Effect.succeed(undefined)
              : Effect.map(oauth.apps(accountId), (apps) => ({ account_id: accountId, apps }))
          ),
          found(accountId)
        )
    })
  })
)
