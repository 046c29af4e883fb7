import { Effect, Schema } from "effect"
import { MicroblogUrlResolution } from "../../contract/records.ts"
import { hosts, microblogUrlOf, parseMicroblogUrl } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const resolveMicroblogUrl = defineOperation({
  id: "resolveMicroblogUrl",
  platform: "microblog",
  path: "/microblog/resolve-url",
  kind: "microblog_url_resolution",
  description: `Identify what a ${hosts.microblog} URL points at (profile or tweet) before fetching: type, id, handle and canonical_url. 2 credits. Tracking parameters, www/m hosts and trailing slashes are tolerated. Then use the handle or id with getMicroblogProfile or getTweets, or the tweet id with getTweet. Skip it when a handle, id or clean URL is already known: those operations take URLs directly.`,
  common: false,
  params: Schema.Struct({
    url: Schema.String.annotate({ description: `A ${hosts.microblog} profile or status URL.` })
  }),
  data: MicroblogUrlResolution,
  prepare: (params) =>
    Effect.map(cleaned("url", parseMicroblogUrl(params.url)), (target) => ({
      args: target,
      quote: prices.resolveMicroblogUrl()
    })),
  run: (target, context) =>
    Effect.gen(function* () {
      const url = microblogUrlOf(target)
      const fetched = yield* fetchVia(context.freshness, "resolveMicroblogUrl", url)
      if (fetched.value === undefined) return yield* notFound(`No ${target.type} at ${url}.`)
      return served(fetched, fetched.value)
    })
})
