import * as microblog from "../../contract/operations/microblog.ts"
import { implement } from "../Operation.ts"
import { fetchVia, invalid, pageResult } from "../support.ts"

export const microblogSearch = implement(microblog.microblogSearch, {
  *prepare(params, price) {
    const query = params.query.trim().replace(/\s+/g, " ")
    if (query.length === 0) return yield* invalid("query", "Send free-text search terms in query.")
    return {
      args: { search: { query, sort: params.sort ?? "latest" }, cursor: params.cursor },
      quote: price(),
      continuation: params.cursor !== undefined
    }
  },
  *run({ search, cursor }, context) {
    const fetched = yield* fetchVia(context.freshness, "microblogSearch", search, cursor)
    return yield* pageResult(fetched, "results", "No results.")
  }
})
