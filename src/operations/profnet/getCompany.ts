import { Effect } from "effect"
import * as profnet from "../../contract/operations/profnet.ts"
import { parseCompany } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned } from "../support.ts"
import { lookupCompany } from "./company.ts"

export const getCompany = implement(profnet.getCompany, {
  prepare: (params, price) =>
    Effect.map(
      cleaned("identifier", (hosts) => parseCompany(params.identifier, hosts)),
      (ref) => ({
        args: ref,
        quote: price("domain" in ref)
      })
    ),
  run: (ref, context) =>
    Effect.map(lookupCompany(ref, context.freshness), (found) => ({
      data: found.company,
      refunds: found.refunds,
      served: found.served,
      fetchedAt: found.fetchedAt
    }))
})
