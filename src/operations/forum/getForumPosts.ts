import { Effect, Schema } from "effect"
import { CommentSort, ForumPost, ForumThread } from "../../contract/records.ts"
import { hosts, parseForumPostId } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { CommaList, fetchVia, invalid, notFound, served } from "../support.ts"

export const ForumPostsData = Schema.Struct({
  posts: Schema.Array(ForumPost),
  missing: Schema.Array(Schema.String),
  thread: Schema.optionalKey(ForumThread)
})

type PostsArgs =
  | { readonly ids: ReadonlyArray<string>; readonly thread: false }
  | {
      readonly ids: readonly [string]
      readonly thread: true
      readonly comment_limit: number
      readonly comment_sort: CommentSort
    }

const maxIds = 100

export const getForumPosts = defineOperation({
  id: "getForumPosts",
  platform: "forum",
  path: "/forum/posts",
  kind: "forum_posts",
  description: `Read ${hosts.forum} posts in full (title, body, author, community, upvotes, comment_count, created_at, permalink) by id or permalink, 1 to 100 per call; ids that do not exist are listed in missing (NOT_FOUND only when none exists). 4 credits for up to 10 ids, +1 per further 10. thread=true reads one post's full discussion (exactly one id): comments in reading order, each after its parent, with parent_id and depth; comment_limit 1-500 (default 100), comment_sort top (default), new or old; it adds 4 credits (8 in all). A comment permalink reads the post it belongs to. Find posts with forumSearch or getCommunityPosts.`,
  common: true,
  params: Schema.Struct({
    ids: CommaList(Schema.String).annotate({
      description: "Comma-separated forum post ids (e.g. 1abc2d) or permalinks, 1 to 100."
    }),
    thread: Schema.optionalKey(Schema.Boolean).annotate({
      description: "true: the full discussion of one post (+4 credits). Only with exactly one id."
    }),
    comment_limit: Schema.optionalKey(
      Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 500 }))
    ).annotate({ description: "With thread=true: at most this many comments, 1 to 500 (default 100)." }),
    comment_sort: Schema.optionalKey(CommentSort).annotate({
      description: "With thread=true: top (default), new or old."
    })
  }),
  data: ForumPostsData,
  prepare: (params) =>
    Effect.gen(function* () {
      const ids = new Set<string>()
      for (const entry of params.ids) {
        const parsed = parseForumPostId(entry)
        if (!parsed.ok)
          return yield* invalid("ids", `"${entry}" is not a post id or permalink. ${parsed.message}`)
        ids.add(parsed.value)
      }
      if (ids.size === 0 || ids.size > maxIds) {
        return yield* invalid(
          "ids",
          `Send 1 to ${maxIds} post ids or permalinks, comma-separated (got ${ids.size}); split larger lists into several calls.`
        )
      }
      const [first, ...others] = ids
      const thread = params.thread ?? false
      if (thread && others.length > 0) {
        return yield* invalid("thread", "thread=true reads the discussion of one post: send exactly one id.")
      }
      const args: PostsArgs = thread
        ? {
            ids: [first!],
            thread,
            comment_limit: params.comment_limit ?? 100,
            comment_sort: params.comment_sort ?? "top"
          }
        : { ids: [...ids], thread }
      return { args, quote: prices.getForumPosts(ids.size, thread) }
    }),
  run: (args: PostsArgs, context) =>
    Effect.gen(function* () {
      if (args.thread) {
        const [id] = args.ids
        const fetched = yield* fetchVia(
          context.freshness,
          "getThread",
          id,
          args.comment_limit,
          args.comment_sort
        )
        const thread = fetched.value
        if (thread === undefined) return yield* notFound(`No ${hosts.forum} post with the id ${id}.`)
        return served(fetched, { posts: [thread.post], missing: [], thread })
      }
      const fetched = yield* fetchVia(context.freshness, "getForumPosts", args.ids)
      // A missing post is `undefined` as fetched and `null` once the cache's JSON copy is read back.
      const found = fetched.value.map((post) => post ?? undefined)
      const posts = found.filter((post) => post !== undefined)
      if (posts.length === 0) {
        return yield* notFound(`None of these ${hosts.forum} posts exists: ${args.ids.join(", ")}.`)
      }
      return served(fetched, { posts, missing: args.ids.filter((_, i) => found[i] === undefined) })
    })
})
