import { PlatformHosts } from "../../config.ts"
import * as microblog from "../../contract/operations/microblog.ts"
import { microblogUrlOf, parseMicroblogUrl } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const resolveMicroblogUrl = implement(microblog.resolveMicroblogUrl, {
  *prepare(params, price) {
    const target = yield* cleaned("url", (hosts) => parseMicroblogUrl(params.url, hosts))
    return { args: target, quote: price() }
  },
  *run(target, context) {
    const url = microblogUrlOf(target, yield* PlatformHosts)
    const fetched = yield* fetchVia(context.freshness, "resolveMicroblogUrl", url)
    if (fetched.value === undefined) return yield* notFound(`No ${target.type} at ${url}.`)
    return served(fetched, fetched.value)
  }
})
