import { Effect, Schema } from "effect"
import { CommunitySort, ForumPostSummary, ForumRange, pageData } from "../../contract/records.ts"
import { hosts, parseCommunity } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { cleaned, fetchVia, invalid, pageResult } from "../support.ts"
import { CommunityName } from "./getCommunity.ts"

export const CommunityPostsData = pageData("posts", ForumPostSummary)

interface FeedArgs {
  readonly name: string
  readonly sort: CommunitySort
  /** Only with sort=top. */
  readonly range?: ForumRange
  readonly cursor: string | undefined
}

export const getCommunityPosts = defineOperation({
  id: "getCommunityPosts",
  platform: "forum",
  path: "/forum/communities/posts",
  kind: "community_posts",
  description: `One page (up to 10) of a ${hosts.forum} community's feed: post summaries (id, title, author, upvotes, comment_count, created_at, permalink) and a cursor. 4 credits per page; each cursor page is a new 4-credit call (paid keys only; trial keys get first pages). sort: hot (default), new, top or rising; range (past_hour, today, past_week, past_month, past_year, all_time; default all_time) only with sort=top. The feed reaches back at most about 1,000 posts. Use forumSearch to find posts by keywords across communities, getCommunity for the community's details, and getForumPosts (thread=true) to read a post with its discussion.`,
  common: true,
  params: Schema.Struct({
    community_name: CommunityName,
    sort: Schema.optionalKey(CommunitySort).annotate({ description: "hot (default), new, top or rising." }),
    range: Schema.optionalKey(ForumRange).annotate({
      description:
        "Only with sort=top: past_hour, today, past_week, past_month, past_year or all_time (default)."
    }),
    cursor: Schema.optionalKey(Schema.String).annotate({ description: "From a previous page." })
  }),
  data: CommunityPostsData,
  prepare: (params) =>
    Effect.gen(function* () {
      const name = yield* cleaned("community_name", parseCommunity(params.community_name))
      const sort = params.sort ?? "hot"
      if (sort !== "top" && params.range !== undefined) {
        return yield* invalid("range", "range applies only with sort=top; omit it or send sort=top.")
      }
      const args: FeedArgs =
        sort === "top"
          ? { name, sort, range: params.range ?? "all_time", cursor: params.cursor }
          : { name, sort, cursor: params.cursor }
      return { args, quote: prices.getCommunityPosts(), continuation: params.cursor !== undefined }
    }),
  run: ({ name, sort, range, cursor }: FeedArgs, context) =>
    Effect.gen(function* () {
      const fetched = yield* fetchVia(
        context.freshness,
        "getCommunityPosts",
        name,
        sort,
        range ?? "all_time",
        cursor
      )
      return yield* pageResult(
        fetched,
        "posts",
        `No community "${name}". Find communities with forumSearch type=communities.`
      )
    })
})
