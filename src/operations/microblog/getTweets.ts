import { PlatformHosts } from "../../config.ts"
import * as microblog from "../../contract/operations/microblog.ts"
import { parseMicroblogAccount } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, pageResult } from "../support.ts"

export const getTweets = implement(microblog.getTweets, {
  *prepare(params, price) {
    const account = yield* cleaned("identifier", (hosts) => parseMicroblogAccount(params.identifier, hosts))
    return {
      args: { account, include_replies: params.include_replies ?? false, cursor: params.cursor },
      quote: price(),
      continuation: params.cursor !== undefined
    }
  },
  *run({ account, include_replies, cursor }, context) {
    const hosts = yield* PlatformHosts
    const handleOrId = "handle" in account ? account.handle : account.id
    const fetched = yield* fetchVia(context.freshness, "getTweets", handleOrId, include_replies, cursor)
    return yield* pageResult(fetched, "tweets", `No ${hosts.microblog} account with this handle or id.`)
  }
})
