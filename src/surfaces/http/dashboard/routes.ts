import { Layer } from "effect"
import type { AnyOperation } from "../../../operations/Operation.ts"
import { ActivityRoutes } from "./activity.ts"
import { DashboardAppsRoutes } from "./apps.ts"
import { BillingRoutes } from "./billing.ts"
import { KeysRoutes } from "./keys.ts"
import { OverviewRoutes } from "./overview.ts"
import { TokensRoutes } from "./tokens.ts"
import { UsageRoutes } from "./usage.ts"
import { WebhooksRoutes } from "./webhooks.ts"

/**
 * `/dashboard`: a signed-in person's account, server-rendered, one file per section. The `/login`
 * cookie signs in; every form carries the session's CSRF token and the account it acts on, which
 * must be one the sign-in governs (guard.ts). Each page calls the services the management API
 * calls, never the API itself.
 */
export const DashboardRoutes = <R>(operations: ReadonlyArray<AnyOperation<R>>) =>
  Layer.mergeAll(
    OverviewRoutes,
    UsageRoutes(operations),
    KeysRoutes,
    BillingRoutes,
    TokensRoutes,
    DashboardAppsRoutes,
    WebhooksRoutes,
    ActivityRoutes
  )
