import { Effect, Schema } from "effect"
import { MicroblogSort, pageData, Tweet } from "../../contract/records.ts"
import { hosts } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { fetchVia, invalid, pageResult } from "../support.ts"

export const MicroblogSearchData = pageData("results", Tweet)

export const microblogSearch = defineOperation({
  id: "microblogSearch",
  platform: "microblog",
  path: "/microblog/search",
  kind: "microblog_search",
  description: `Search ${hosts.microblog} tweets by free text (words or @handles). 6 credits per page of up to 20 tweets (id, text, created_at, author {id, handle, name}, likes, reposts, replies, quotes, views, lang, is_repost, is_reply, url) plus a cursor; each cursor page is a new 6-credit call (paid keys only; trial keys get first pages). sort: latest (default, newest first) or top (most liked among recent matches). Depth is capped upstream per query. To read one account's timeline use getTweets; for one tweet by id or URL use getTweet.`,
  common: true,
  params: Schema.Struct({
    query: Schema.String.check(Schema.isMaxLength(512)).annotate({
      description: "Free-text search terms or @handles (at most 512 characters)."
    }),
    sort: Schema.optionalKey(MicroblogSort).annotate({ description: "latest (default) or top." }),
    cursor: Schema.optionalKey(Schema.String).annotate({ description: "From a previous page." })
  }),
  data: MicroblogSearchData,
  prepare: (params) =>
    Effect.gen(function* () {
      const query = params.query.trim().replace(/\s+/g, " ")
      if (query.length === 0) return yield* invalid("query", "Send free-text search terms in query.")
      return {
        args: { search: { query, sort: params.sort ?? "latest" }, cursor: params.cursor },
        quote: prices.microblogSearch(),
        continuation: params.cursor !== undefined
      }
    }),
  run: ({ search, cursor }, context) =>
    Effect.gen(function* () {
      const fetched = yield* fetchVia(context.freshness, "microblogSearch", search, cursor)
      return yield* pageResult(fetched, "results", "No results.")
    })
})
