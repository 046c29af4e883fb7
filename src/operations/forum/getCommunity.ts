import * as forum from "../../contract/operations/forum.ts"
import { parseCommunity } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const getCommunity = implement(forum.getCommunity, {
  *prepare(params, price) {
    const name = yield* cleaned("community_name", (hosts) => parseCommunity(params.community_name, hosts))
    const includeSettings = params.include_settings ?? false
    return { args: { name, includeSettings }, quote: price(includeSettings) }
  },
  *run({ name, includeSettings }, context) {
    const fetched = yield* fetchVia(context.freshness, "getCommunity", name, includeSettings)
    if (fetched.value === undefined) {
      return yield* notFound(
        `No community "${name}". Check the name after /c/ in its URL, or find it with forumSearch type=communities.`
      )
    }
    return served(fetched, fetched.value)
  }
})
