import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { BaseApi } from "../../../contract/api.ts"
import { Governing } from "../../../contract/governance.ts"
import { selectAccount } from "../../../identity/Bearers.ts"
import { OAuthServer } from "../../../oauth/OAuthServer.ts"
import { Problems } from "../../common/problems.ts"
import { answering } from "../governanceRoutes.ts"

/** `GET /v1/apps` and `POST /v1/apps/revoke`: the connected apps of an account the sign-in governs. */
export const AppsRoutes = HttpApiBuilder.group(BaseApi, "apps", (handlers) =>
  Effect.gen(function* () {
    const oauth = yield* OAuthServer
    const answer = answering(yield* Problems)
    return handlers
      .handle("listApps", ({ query }) =>
        answer(
          Effect.gen(function* () {
            const account = yield* selectAccount(yield* Governing, query.account_id)
            return { account_id: account.id, apps: yield* oauth.apps(account.id) }
          })
        )
      )
      .handle("revokeApp", ({ payload, query }) =>
        answer(
          Effect.gen(function* () {
            const account = yield* selectAccount(yield* Governing, payload.account_id ?? query.account_id)
            return yield* oauth.revoke(account.id, payload.app_id)
          })
        )
      )
  })
)
