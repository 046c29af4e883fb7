import { Effect, Schema } from "effect"
import { ForumRange, ForumSearchItem, ForumSearchType, ForumSort, pageData } from "../../contract/records.ts"
import { hosts, looksLikeUrl, urlPath } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import type { ForumSearchQuery } from "../../upstream/contract.ts"
import { defineOperation } from "../Operation.ts"
import { fetchVia, invalid, pageResult } from "../support.ts"

export const ForumSearchData = pageData("results", ForumSearchItem)

const urlLike = (word: string) =>
  looksLikeUrl(word) || /^www\./i.test(word) || urlPath(word, hosts.forum) !== undefined

const commentSorts: ReadonlyArray<string> = ["relevance", "top", "new"]

export const forumSearch = defineOperation({
  id: "forumSearch",
  platform: "forum",
  path: "/forum/search",
  kind: "forum_search",
  description: `Search ${hosts.forum} by free text for posts (default), comments, communities or users. 6 credits per page of up to 10 summaries (author, title or comment text, upvotes, comment_count, created_at, permalink, id) plus a cursor; each cursor page is a new 6-credit call (paid keys only; trial keys get first pages). sort: relevance (default), top, new, hot or comment_count for posts; relevance, top or new for comments; not accepted for communities and users. range (past_hour, today, past_week, past_month, past_year, all_time; default all_time) applies to posts only. Comment search has no time window: filter on created_at yourself and poll with sort=new. Depth is capped upstream at a few hundred results per query. query is free text, never a URL: identify a URL with resolveForumUrl, read posts and their discussion with getForumPosts, and use getCommunity or getCommunityPosts for a known community.`,
  common: true,
  params: Schema.Struct({
    query: Schema.String.check(Schema.isMaxLength(256)).annotate({
      description: "Free-text search terms (at most 256 characters); not a URL."
    }),
    type: Schema.optionalKey(ForumSearchType).annotate({
      description: "posts (default), comments, communities or users."
    }),
    sort: Schema.optionalKey(ForumSort).annotate({
      description:
        "relevance (default), top, new, hot, comment_count for posts; relevance, top, new for comments; omit for communities and users."
    }),
    range: Schema.optionalKey(ForumRange).annotate({
      description: "Posts only: past_hour, today, past_week, past_month, past_year or all_time (default)."
    }),
    cursor: Schema.optionalKey(Schema.String).annotate({ description: "From a previous page." })
  }),
  data: ForumSearchData,
  prepare: (params) =>
    Effect.gen(function* () {
      const query = params.query.trim().replace(/\s+/g, " ")
      if (query.length === 0) return yield* invalid("query", "Send free-text search terms in query.")
      if (query.split(" ").some(urlLike)) {
        return yield* invalid(
          "query",
          `query is free text, not a URL. Identify a ${hosts.forum} URL with resolveForumUrl (GET /v1/forum/resolve-url), or read a post by its permalink with getForumPosts.`
        )
      }
      const type = params.type ?? "posts"
      if ((type === "communities" || type === "users") && params.sort !== undefined) {
        return yield* invalid("sort", `sort does not apply to type=${type}; omit it.`)
      }
      if (type === "comments" && params.sort !== undefined && !commentSorts.includes(params.sort)) {
        return yield* invalid("sort", "For type=comments, sort is relevance, top or new.")
      }
      if (type !== "posts" && params.range !== undefined) {
        return yield* invalid(
          "range",
          "range applies to type=posts only. Comment search has no time window: filter on created_at and poll with sort=new."
        )
      }
      const search: ForumSearchQuery =
        type === "posts"
          ? { query, type, sort: params.sort ?? "relevance", range: params.range ?? "all_time" }
          : type === "comments"
            ? { query, type, sort: params.sort ?? "relevance" }
            : { query, type }
      return {
        args: { search, cursor: params.cursor },
        quote: prices.forumSearch(),
        continuation: params.cursor !== undefined
      }
    }),
  run: ({ search, cursor }, context) =>
    Effect.gen(function* () {
      const fetched = yield* fetchVia(context.freshness, "forumSearch", search, cursor)
      return yield* pageResult(fetched, "results", "No results.")
    })
})
