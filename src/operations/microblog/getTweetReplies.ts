import { PlatformHosts } from "../../config.ts"
import * as microblog from "../../contract/operations/microblog.ts"
import { parseTweetId } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, pageResult } from "../support.ts"

export const getTweetReplies = implement(microblog.getTweetReplies, {
  *prepare(params, price) {
    const id = yield* cleaned("id", (hosts) => parseTweetId(params.id, hosts))
    return {
      args: { id, sort: params.sort ?? "top", cursor: params.cursor },
      quote: price(),
      continuation: params.cursor !== undefined
    }
  },
  *run({ id, sort, cursor }, context) {
    const hosts = yield* PlatformHosts
    const fetched = yield* fetchVia(context.freshness, "getTweetReplies", id, sort, cursor)
    return yield* pageResult(fetched, "replies", `No ${hosts.microblog} tweet with the id ${id}.`)
  }
})
