import { PlatformHosts } from "../../config.ts"
import * as microblog from "../../contract/operations/microblog.ts"
import { parseTweetId } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const getTweet = implement(microblog.getTweet, {
  *prepare(params, price) {
    const id = yield* cleaned("id", (hosts) => parseTweetId(params.id, hosts))
    return { args: { id }, quote: price() }
  },
  *run({ id }, context) {
    const hosts = yield* PlatformHosts
    const fetched = yield* fetchVia(context.freshness, "getTweet", id)
    if (fetched.value === undefined) return yield* notFound(`No ${hosts.microblog} tweet with the id ${id}.`)
    return served(fetched, fetched.value)
  }
})
