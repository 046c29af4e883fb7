import * as profnet from "../../contract/operations/profnet.ts"
import { parseCompany } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned } from "../support.ts"
import { lookupCompany } from "./company.ts"

export const getCompany = implement(profnet.getCompany, {
  *prepare(params, price) {
    const ref = yield* cleaned("identifier", (hosts) => parseCompany(params.identifier, hosts))
    return { args: ref, quote: price("domain" in ref) }
  },
  *run(ref, context) {
    const found = yield* lookupCompany(ref, context.freshness)
    return { data: found.company, refunds: found.refunds, served: found.served, fetchedAt: found.fetchedAt }
  }
})
