import { Effect, Schema } from "effect"
import { ForumUrlResolution } from "../../contract/records.ts"
import { forumUrlOf, hosts, parseForumUrl } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const resolveForumUrl = defineOperation({
  id: "resolveForumUrl",
  platform: "forum",
  path: "/forum/resolve-url",
  kind: "forum_url_resolution",
  description: `Identify what a ${hosts.forum} URL points at (post, comment, community or user) before fetching: type, id, community, post_id, username and canonical_url. 2 credits. Tracking parameters, www/m hosts and trailing slashes are tolerated. Then read a post (or a comment's post_id) with getForumPosts, a community with getCommunity or getCommunityPosts, a user with getForumUser. Skip it when you already have a permalink or name: those operations take URLs directly.`,
  common: false,
  params: Schema.Struct({
    url: Schema.String.annotate({ description: `A ${hosts.forum} post, comment, community or user URL.` })
  }),
  data: ForumUrlResolution,
  prepare: (params) =>
    Effect.map(cleaned("url", parseForumUrl(params.url)), (target) => ({
      args: target,
      quote: prices.resolveForumUrl()
    })),
  run: (target, context) =>
    Effect.gen(function* () {
      const url = forumUrlOf(target)
      const fetched = yield* fetchVia(context.freshness, "resolveForumUrl", url)
      if (fetched.value === undefined) return yield* notFound(`No ${target.type} at ${url}.`)
      return served(fetched, fetched.value)
    })
})
