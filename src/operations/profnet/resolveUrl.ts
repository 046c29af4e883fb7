import { Effect, Schema } from "effect"
import { ProfnetUrlResolution } from "../../contract/records.ts"
import { hosts, parseProfnetUrl } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const resolveUrl = defineOperation({
  id: "resolveUrl",
  platform: "profnet",
  path: "/profnet/resolve-url",
  kind: "url_resolution",
  description: `Identify what a ${hosts.profnet} URL points at (person, company or post) before fetching. 2 credits. Tracking parameters, www/m hosts and trailing slashes are tolerated. Use the returned handle or id with getProfile/getPosts for people, and the handle (not the id) with getCompany/getPosts for companies. Skip it when a slug, URN or clean URL is already known.`,
  common: false,
  params: Schema.Struct({
    url: Schema.String.annotate({ description: `A ${hosts.profnet} profile, company or post URL.` })
  }),
  data: ProfnetUrlResolution,
  prepare: (params) =>
    Effect.map(cleaned("url", parseProfnetUrl(params.url)), (target) => ({
      args: target,
      quote: prices.resolveUrl()
    })),
  run: (target, context) =>
    Effect.gen(function* () {
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
    })
})
