import { Effect } from "effect"
import { PlatformHosts } from "../../config.ts"
import * as profnet from "../../contract/operations/profnet.ts"
import { parseProfnetUrl } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const resolveUrl = implement(profnet.resolveUrl, {
  *prepare(params, price) {
    const target = yield* cleaned("url", (hosts) => parseProfnetUrl(params.url, hosts))
    return { args: target, quote: price() }
  },
  *run(target, context) {
    const hosts = yield* PlatformHosts
    if (target.type === "post") {
      // A post URL carries its activity URN: no upstream fetch.
      const id = `urn:li:activity:${target.activityId}`
      return {
        data: {
          type: "post" as const,
          id,
          handle: target.authorSlug ?? "",
          canonical_url: `https://${hosts.profnet}/feed/update/${id}/`
        },
        refunds: [],
        served: "recent" as const,
        fetchedAt: yield* Effect.clockWith((clock) => clock.currentTimeMillis)
      }
    }
    const url = `https://${hosts.profnet}/${target.type === "person" ? "in" : "company"}/${target.slug}/`
    const fetched = yield* fetchVia(context.freshness, "resolveProfnetUrl", url)
    if (fetched.value === undefined) return yield* notFound(`No ${target.type} at ${url}.`)
    return served(fetched, fetched.value)
  }
})
