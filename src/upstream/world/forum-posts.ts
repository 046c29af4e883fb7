import type {
  ForumComment,
  ForumCommentSummary,
  ForumPost,
  ForumPostSummary
} from "../../contract/records.ts"
import type { Ctx } from "./context.ts"
import { type CommunityCore, communityCore, forumUserCore, userOfSlot } from "./forum-core.ts"
import { B36, decodeBase } from "./ids.ts"
import { pareto, rngFor, u3 } from "./random.ts"
import { SIZES, SLOTS_PER_COMMUNITY } from "./sizes.ts"
import { DAY_MS, EPOCH_MS, iso, slugify, YEAR_MS } from "./text.ts"
import { commentPieces, forumBody, forumComment, forumTitle, piecesHave, titlePieces } from "./text-gen.ts"

export const POSTS_PER_COMMUNITY_BITS = 4096
export const COMMENTS_PER_POST_BITS = 8192
const POST_ID_OFFSET = 36 ** 5
const COMMENT_ID_OFFSET = 36 ** 6

/** Fields of a post that ranking and filtering need, derived without generating any text. */
export interface PostCheap {
  readonly c: number
  readonly j: number
  readonly key: number
  readonly createdMs: number
  readonly upvotes: number
  readonly comments: number
  readonly slot: number
}

/** Posts of a community are numbered oldest (0) to newest; time grows strictly with the number. */
export const postCheap = (ctx: Ctx, core: CommunityCore, j: number): PostCheap => {
  const k = ctx.k.fpost
  const c = core.index
  const key = c * POSTS_PER_COMMUNITY_BITS + j
  const span = Math.max(DAY_MS, Math.min(4.8 * YEAR_MS, EPOCH_MS - core.createdMs - DAY_MS))
  const lastGap = u3(k, c, 7) ** 3 * 20 * DAY_MS
  const x = (j + 0.9 * u3(k, key, 1)) / core.postCount
  // Bigger communities vote more: the floor of the heavy tail grows with the audience.
  const upvotes = pareto(
    u3(k, key, 3),
    1 + Math.floor(core.subscribers / 50_000),
    0.75,
    Math.max(50, Math.floor(core.subscribers * 0.02))
  )
  return {
    c,
    j,
    key,
    createdMs: Math.floor(EPOCH_MS - lastGap - span * (1 - x) * (1 - x)),
    upvotes,
    comments: Math.min(3000, Math.floor(upvotes ** 0.75 * u3(k, key, 4) * 1.5)),
    slot: Math.floor(SLOTS_PER_COMMUNITY * u3(k, key, 2) ** 2)
  }
}

export const forumPostId = (ctx: Ctx, key: number): string =>
  (ctx.perm.fpostId.forward(key) + POST_ID_OFFSET).toString(36)

/** (community, post number) of a post id, or undefined for ids no post has. */
export const decodeForumPostId = (ctx: Ctx, id: string): PostCheap | undefined => {
  const n = decodeBase(id.toLowerCase(), B36)
  if (n === undefined || n < POST_ID_OFFSET || n - POST_ID_OFFSET >= ctx.perm.fpostId.size) return undefined
  const key = ctx.perm.fpostId.inverse(n - POST_ID_OFFSET)
  const c = Math.floor(key / POSTS_PER_COMMUNITY_BITS)
  const j = key % POSTS_PER_COMMUNITY_BITS
  if (c >= SIZES.communities) return undefined
  const core = communityCore(ctx, c)
  return j < core.postCount && forumPostId(ctx, key) === id.toLowerCase()
    ? postCheap(ctx, core, j)
    : undefined
}

export const titleOf = (ctx: Ctx, core: CommunityCore, key: number): string =>
  forumTitle(rngFor(ctx.k.fpost, key), core.topics)

/** Whether the title has every term, without rendering it. */
export const titleHas = (
  ctx: Ctx,
  core: CommunityCore,
  key: number,
  tokens: ReadonlyArray<string>
): boolean => piecesHave(titlePieces(rngFor(ctx.k.fpost, key), core.topics), tokens)

const permalinkOf = (core: CommunityCore, id: string, title: string): string =>
  `${core.url}comments/${id}/${slugify(title, "_").slice(0, 50).replace(/_+$/, "")}/`

export const postSummary = (
  ctx: Ctx,
  p: PostCheap,
  core = communityCore(ctx, p.c),
  title = titleOf(ctx, core, p.key)
): ForumPostSummary => {
  const id = forumPostId(ctx, p.key)
  return {
    kind: "post",
    id,
    author: forumUserCore(ctx, userOfSlot(ctx, p.c, p.slot)).username,
    community: core.name,
    upvotes: p.upvotes,
    created_at: iso(p.createdMs),
    permalink: permalinkOf(core, id, title),
    title,
    comment_count: p.comments
  }
}

export const fullPost = (ctx: Ctx, p: PostCheap): ForumPost => {
  const core = communityCore(ctx, p.c)
  const { kind: _kind, ...s } = postSummary(ctx, p, core)
  const rng = rngFor(ctx.k.fpost, p.key, 1)
  return { ...s, body: forumBody(rng, core.topics), url: s.permalink }
}

// ---------------------------------------------------------------- comments

export interface CommentCheap {
  readonly post: PostCheap
  readonly i: number
  readonly key: number
  readonly parent: number
  readonly createdMs: number
  readonly upvotes: number
  readonly slot: number
}

/**
 * A comment's parent is a uniformly chosen earlier comment (a random recursive tree, so threads
 * stay a few levels deep) and replies never predate what they answer.
 */
export const commentCheap = (ctx: Ctx, post: PostCheap, i: number): CommentCheap => {
  const k = ctx.k.comment
  const key = post.key * COMMENTS_PER_POST_BITS + i
  const start = post.createdMs + Math.min(60_000, (EPOCH_MS - post.createdMs) / 2)
  const window = Math.min(EPOCH_MS - start, 3 * DAY_MS + post.comments * 120_000)
  const x = (i + 0.9 * u3(k, key, 4)) / Math.max(1, post.comments)
  const up = pareto(u3(k, key, 5), 1, 0.9, Math.max(10, Math.floor(post.upvotes * 0.5)))
  return {
    post,
    i,
    key,
    parent: i === 0 || u3(k, key, 1) < 0.4 ? -1 : Math.floor(u3(k, key, 2) * i),
    createdMs: Math.floor(start + window * x * x * x),
    // 0 - n rather than -n: never -0, which JSON cannot carry.
    upvotes: u3(k, key, 6) < 0.04 ? 0 - Math.floor(u3(k, key, 7) * 6) : up,
    slot: Math.floor(SLOTS_PER_COMMUNITY * u3(k, key, 3) ** 1.5)
  }
}

export const commentId = (ctx: Ctx, key: number): string =>
  (ctx.perm.commentId.forward(key) + COMMENT_ID_OFFSET).toString(36)

export const decodeCommentId = (ctx: Ctx, id: string): CommentCheap | undefined => {
  const n = decodeBase(id.toLowerCase(), B36)
  if (n === undefined || n < COMMENT_ID_OFFSET || n - COMMENT_ID_OFFSET >= ctx.perm.commentId.size)
    return undefined
  const key = ctx.perm.commentId.inverse(n - COMMENT_ID_OFFSET)
  const postKey = Math.floor(key / COMMENTS_PER_POST_BITS)
  const i = key % COMMENTS_PER_POST_BITS
  const c = Math.floor(postKey / POSTS_PER_COMMUNITY_BITS)
  if (c >= SIZES.communities) return undefined
  const core = communityCore(ctx, c)
  const j = postKey % POSTS_PER_COMMUNITY_BITS
  if (j >= core.postCount) return undefined
  const post = postCheap(ctx, core, j)
  return i < post.comments ? commentCheap(ctx, post, i) : undefined
}

export const commentText = (ctx: Ctx, core: CommunityCore, key: number): string =>
  forumComment(rngFor(ctx.k.comment, key), core.topics)

export const commentHas = (
  ctx: Ctx,
  core: CommunityCore,
  key: number,
  tokens: ReadonlyArray<string>
): boolean => piecesHave(commentPieces(rngFor(ctx.k.comment, key), core.topics), tokens)

export const commentSummary = (
  ctx: Ctx,
  cm: CommentCheap,
  core = communityCore(ctx, cm.post.c),
  text = commentText(ctx, core, cm.key)
): ForumCommentSummary => {
  const postId = forumPostId(ctx, cm.post.key)
  const id = commentId(ctx, cm.key)
  return {
    kind: "comment",
    id,
    author: forumUserCore(ctx, userOfSlot(ctx, cm.post.c, cm.slot)).username,
    community: core.name,
    upvotes: cm.upvotes,
    created_at: iso(cm.createdMs),
    permalink: `${permalinkOf(core, postId, titleOf(ctx, core, cm.post.key))}${id}/`,
    post_id: postId,
    text,
    comment_count: cm.post.comments
  }
}

export const fullComment = (ctx: Ctx, cm: CommentCheap, depth: number): ForumComment => {
  const s = commentSummary(ctx, cm)
  const parent = cm.parent < 0 ? null : commentId(ctx, cm.post.key * COMMENTS_PER_POST_BITS + cm.parent)
  return {
    id: s.id,
    post_id: s.post_id,
    parent_id: parent,
    author: s.author,
    text: s.text,
    upvotes: s.upvotes,
    created_at: s.created_at,
    depth,
    permalink: s.permalink
  }
}

export const commentDepth = (ctx: Ctx, cm: CommentCheap): number => {
  let depth = 0
  let cur = cm
  while (cur.parent >= 0) {
    cur = commentCheap(ctx, cm.post, cur.parent)
    depth++
  }
  return depth
}
