import * as forum from "../../contract/operations/forum.ts"
import type { CommunitySort, ForumRange } from "../../contract/records.ts"
import { parseCommunity } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, invalid, pageResult } from "../support.ts"

interface FeedArgs {
  readonly name: string
  readonly sort: CommunitySort
  /** Only with sort=top. */
  readonly range?: ForumRange
  readonly cursor: string | undefined
}

export const getCommunityPosts = implement(forum.getCommunityPosts, {
  *prepare(params, price) {
    const name = yield* cleaned("community_name", (hosts) => parseCommunity(params.community_name, hosts))
    const sort = params.sort ?? "hot"
    if (sort !== "top" && params.range !== undefined) {
      return yield* invalid("range", "range applies only with sort=top; omit it or send sort=top.")
    }
    const args: FeedArgs =
      sort === "top"
        ? { name, sort, range: params.range ?? "all_time", cursor: params.cursor }
        : { name, sort, cursor: params.cursor }
    return { args, quote: price(), continuation: params.cursor !== undefined }
  },
  *run({ name, sort, range, cursor }: FeedArgs, context) {
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
  }
})
