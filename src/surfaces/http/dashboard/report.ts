import { Clock, Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { AppConfig } from "../../../config.ts"
import type { Account, Governor } from "../../../domain/accounts.ts"
import { Bearers } from "../../../identity/Bearers.ts"
import { Usage } from "../../../services/Usage.ts"
import { usageReport } from "../../usageReport.ts"

/**
 * The account's `get_usage` report (plan, credits, free budget, history, subscription), as the
 * browser's client address sees it: the same body `GET /v1/usage` answers.
 */
export const usageReporter = Effect.gen(function* () {
  const config = yield* AppConfig
  const usage = yield* Usage
  const bearers = yield* Bearers
  return (governor: Governor, account: Account) =>
    Effect.gen(function* () {
      const ip = bearers.clientIp(yield* HttpServerRequest.HttpServerRequest)
      const facts = yield* usage.facts(account.id, governor.tokenId, ip)
      const now = yield* Clock.currentTimeMillis
      const key = { id: governor.tokenId, accountId: account.id, hint: governor.hint, revoked: false }
      return usageReport({ account, key, ip }, facts, now, config)
    })
})
