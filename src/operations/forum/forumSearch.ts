import { PlatformHosts } from "../../config.ts"
import * as forum from "../../contract/operations/forum.ts"
import { type Hosts, looksLikeUrl, urlPath } from "../../domain/identifiers/index.ts"
import type { ForumSearchQuery } from "../../upstream/contract.ts"
import { implement } from "../Operation.ts"
import { fetchVia, invalid, pageResult } from "../support.ts"

const urlLike = (word: string, hosts: Hosts) =>
  looksLikeUrl(word) || /^www\./i.test(word) || urlPath(word, hosts.forum) !== undefined

const commentSorts: ReadonlyArray<string> = ["relevance", "top", "new"]

export const forumSearch = implement(forum.forumSearch, {
  *prepare(params, price) {
    const query = params.query.trim().replace(/\s+/g, " ")
    if (query.length === 0) return yield* invalid("query", "Send free-text search terms in query.")
    const hosts = yield* PlatformHosts
    if (query.split(" ").some((word) => urlLike(word, hosts))) {
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
      quote: price(),
      continuation: params.cursor !== undefined
    }
  },
  *run({ search, cursor }, context) {
    const fetched = yield* fetchVia(context.freshness, "forumSearch", search, cursor)
    return yield* pageResult(fetched, "results", "No results.")
  }
})
