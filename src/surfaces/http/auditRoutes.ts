import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { BaseApi } from "../../contract/api.ts"
import { Governing } from "../../contract/governance.ts"
import * as management from "../common/management.ts"
import { Problems } from "../common/problems.ts"
import { answering } from "./governanceRoutes.ts"

/** `GET /v1/audit`: the audit log of an account the sign-in governs. */
export const AuditRoutes = HttpApiBuilder.group(BaseApi, "audit", (handlers) =>
  Effect.gen(function* () {
    const answer = answering(yield* Problems)
    return handlers.handle("listAuditEvents", ({ query }) =>
      answer(Effect.flatMap(Governing, (governor) => management.listAuditEvents(governor, query)))
    )
  })
)
