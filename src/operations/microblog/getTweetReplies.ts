import { Effect, Schema } from "effect"
import { MicroblogSort, pageData, Tweet } from "../../contract/records.ts"
import { hosts, parseTweetId } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { cleaned, fetchVia, pageResult } from "../support.ts"

export const TweetRepliesData = pageData("replies", Tweet)

export const getTweetReplies = defineOperation({
  id: "getTweetReplies",
  platform: "microblog",
  path: "/microblog/tweet/replies",
  kind: "tweet_replies",
  description: `One page (up to 20) of the replies to a ${hosts.microblog} tweet, each a full tweet (same fields as getTweet; is_reply=true, text starting with @ the parent's author), and a cursor for more; a tweet without replies gives an empty page. sort: top (default, most liked first) or latest (newest first). At most 100 replies per tweet are listed (5 pages), even when its replies count is higher. 4 credits per page; each cursor page is a new 4-credit call (paid keys only; trial keys get first pages). id: the numeric tweet id or a status URL (${hosts.microblog}/<handle>/status/<id>). For the tweet itself use getTweet.`,
  common: true,
  params: Schema.Struct({
    id: Schema.String.annotate({
      description: `Numeric tweet id or a ${hosts.microblog}/<handle>/status/<id> URL.`
    }),
    sort: Schema.optionalKey(MicroblogSort).annotate({
      description: "top (default): most liked first; latest: newest first."
    }),
    cursor: Schema.optionalKey(Schema.String).annotate({
      description: "From a previous page of the same id and sort, for more replies."
    })
  }),
  data: TweetRepliesData,
  prepare: (params) =>
    Effect.map(cleaned("id", parseTweetId(params.id)), (id) => ({
      args: { id, sort: params.sort ?? "top", cursor: params.cursor },
      quote: prices.getTweetReplies(),
      continuation: params.cursor !== undefined
    })),
  run: ({ id, sort, cursor }, context) =>
    Effect.gen(function* () {
      const fetched = yield* fetchVia(context.freshness, "getTweetReplies", id, sort, cursor)
      return yield* pageResult(fetched, "replies", `No ${hosts.microblog} tweet with the id ${id}.`)
    })
})
