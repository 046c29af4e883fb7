import { Effect, Schema } from "effect"
import { Tweet } from "../../contract/records.ts"
import { hosts, parseTweetId } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const getTweet = defineOperation({
  id: "getTweet",
  platform: "microblog",
  path: "/microblog/tweet",
  kind: "tweet",
  description: `One ${hosts.microblog} tweet with full metrics: id, text, created_at, author {id, handle, name}, likes, reposts, replies, quotes, views, lang, is_repost, is_reply, url. 4 credits. id: the numeric tweet id or a status URL (${hosts.microblog}/<handle>/status/<id>; tracking parameters and www/m hosts cleaned). For an account's timeline use getTweets; to search tweets use microblogSearch.`,
  common: true,
  params: Schema.Struct({
    id: Schema.String.annotate({
      description: `Numeric tweet id or a ${hosts.microblog}/<handle>/status/<id> URL.`
    })
  }),
  data: Tweet,
  prepare: (params) =>
    Effect.map(cleaned("id", parseTweetId(params.id)), (id) => ({ args: { id }, quote: prices.getTweet() })),
  run: ({ id }, context) =>
    Effect.gen(function* () {
      const fetched = yield* fetchVia(context.freshness, "getTweet", id)
      if (fetched.value === undefined)
        return yield* notFound(`No ${hosts.microblog} tweet with the id ${id}.`)
      return served(fetched, fetched.value)
    })
})
