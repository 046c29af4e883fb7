import { PlatformHosts } from "../../config.ts"
import * as forum from "../../contract/operations/forum.ts"
import { forumUrlOf, parseForumUrl } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const resolveForumUrl = implement(forum.resolveForumUrl, {
  *prepare(params, price) {
    const target = yield* cleaned("url", (hosts) => parseForumUrl(params.url, hosts))
    return { args: target, quote: price() }
  },
  *run(target, context) {
    const url = forumUrlOf(target, yield* PlatformHosts)
    const fetched = yield* fetchVia(context.freshness, "resolveForumUrl", url)
    if (fetched.value === undefined) return yield* notFound(`No ${target.type} at ${url}.`)
    return served(fetched, fetched.value)
  }
})
