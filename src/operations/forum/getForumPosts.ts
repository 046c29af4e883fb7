import { PlatformHosts } from "../../config.ts"
import * as forum from "../../contract/operations/forum.ts"
import type { CommentSort } from "../../contract/records.ts"
import { parseForumPostId } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { fetchVia, invalid, notFound, served } from "../support.ts"

type PostsArgs =
  | { readonly ids: ReadonlyArray<string>; readonly thread: false }
  | {
      readonly ids: readonly [string]
      readonly thread: true
      readonly comment_limit: number
      readonly comment_sort: CommentSort
    }

const maxIds = 100

export const getForumPosts = implement(forum.getForumPosts, {
  *prepare(params, price) {
    const hosts = yield* PlatformHosts
    const ids = new Set<string>()
    for (const entry of params.ids) {
      const parsed = parseForumPostId(entry, hosts)
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
    return { args, quote: price(ids.size, thread) }
  },
  *run(args: PostsArgs, context) {
    const hosts = yield* PlatformHosts
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
  }
})
