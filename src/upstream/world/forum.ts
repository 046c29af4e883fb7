import type {
  CommentSort,
  Community,
  CommunitySort,
  ForumCommentSummary,
  ForumPost,
  ForumPostSummary,
  ForumRange,
  ForumThread,
  ForumUser,
  ForumUserSection
} from "../../contract/records.ts"
import type { Page } from "../contract.ts"
import type { Ctx } from "./context.ts"
import { InvalidCursor as INVALID, type InvalidCursor, scopeOf, slicePage, startOffset } from "./cursor.ts"
import {
  community,
  communityCore,
  communityIndexByName,
  forumUserCore,
  forumUserIndexByName,
  slotsOfUser
} from "./forum-core.ts"
import {
  type CommentCheap,
  commentCheap,
  commentSummary,
  decodeForumPostId,
  fullComment,
  fullPost,
  type PostCheap,
  postCheap,
  postSummary
} from "./forum-posts.ts"
import { sortDesc } from "./sort.ts"
import { DAY_MS, EPOCH_MS, iso } from "./text.ts"

export const FORUM_PAGE = 10
export const COMMUNITY_FEED_CAP = 1000
const USER_SECTION_SIZE = 25

const RANGE_MS: Readonly<Record<ForumRange, number>> = {
  past_hour: 3_600_000,
  today: DAY_MS,
  past_week: 7 * DAY_MS,
  past_month: 30 * DAY_MS,
  past_year: 365 * DAY_MS,
  all_time: Number.POSITIVE_INFINITY
}

export const inRange = (createdMs: number, range: ForumRange): boolean =>
  EPOCH_MS - createdMs <= RANGE_MS[range]

/** The platform's "hot": log-votes plus a recency bonus worth one order of magnitude per 12.5 h. */
export const hotScore = (p: { readonly upvotes: number; readonly createdMs: number }): number =>
  Math.log10(Math.max(1, p.upvotes)) + (p.createdMs - EPOCH_MS) / 45_000_000

export const getCommunity = (ctx: Ctx, name: string, includeSettings: boolean): Community | undefined => {
  const c = communityIndexByName(ctx, name)
  return c === undefined ? undefined : community(ctx, c, includeSettings)
}

export const getCommunityPosts = (
  ctx: Ctx,
  name: string,
  sort: CommunitySort,
  range: ForumRange,
  cursor: string | undefined
): Page<ForumPostSummary> | InvalidCursor | undefined => {
  const c = communityIndexByName(ctx, name)
  if (c === undefined) return undefined
  const effectiveRange = sort === "top" ? range : "all_time"
  const scope = scopeOf(ctx.seedKey, "getCommunityPosts", [c, sort, effectiveRange])
  const offset = startOffset(cursor, scope)
  if (offset === undefined) return INVALID
  const core = communityCore(ctx, c)
  let posts: Array<PostCheap> = []
  for (let j = core.postCount - 1; j >= 0; j--) posts.push(postCheap(ctx, core, j))
  if (sort === "top")
    posts = sortDesc(
      posts.filter((p) => inRange(p.createdMs, effectiveRange)),
      (p) => p.upvotes
    )
  if (sort === "hot") posts = sortDesc(posts, hotScore)
  if (sort === "rising") {
    const ageH = (p: PostCheap) => Math.max(1, (EPOCH_MS - p.createdMs) / 3_600_000)
    posts = sortDesc(
      posts.filter((p) => EPOCH_MS - p.createdMs <= 7 * DAY_MS),
      (p) => p.upvotes / ageH(p)
    )
  }
  return slicePage(posts.length, offset, FORUM_PAGE, COMMUNITY_FEED_CAP, scope, (i) =>
    postSummary(ctx, posts[i]!, core)
  )
}

export const getForumUser = (
  ctx: Ctx,
  username: string,
  sections: ReadonlyArray<ForumUserSection>
): ForumUser | undefined => {
  const u = forumUserIndexByName(ctx, username)
  if (u === undefined) return undefined
  const core = forumUserCore(ctx, u)
  const base: ForumUser = {
    id: core.id,
    username: core.username,
    karma: core.postKarma + core.commentKarma,
    post_karma: core.postKarma,
    comment_karma: core.commentKarma,
    created_at: iso(core.createdMs),
    profile_url: core.profileUrl
  }
  const withPosts = sections.includes("posts") ? { ...base, posts: userPosts(ctx, u) } : base
  return sections.includes("comments") ? { ...withPosts, comments: userComments(ctx, u) } : withPosts
}

/** A user's posts: the posts of their communities written through their slots (at most ~16k checks). */
const userPosts = (ctx: Ctx, u: number): Array<ForumPostSummary> => {
  const found: Array<PostCheap> = []
  for (const [c, slot] of slotsOfUser(ctx, u)) {
    const core = communityCore(ctx, c)
    for (let j = core.postCount - 1, n = 0; j >= 0 && n < USER_SECTION_SIZE; j--) {
      const p = postCheap(ctx, core, j)
      if (p.slot === slot) {
        found.push(p)
        n++
      }
    }
  }
  return sortDesc(found, (p) => p.createdMs)
    .slice(0, USER_SECTION_SIZE)
    .map((p) => postSummary(ctx, p))
}

/** Recent comments only: the newest posts of each community are scanned within a fixed budget. */
const userComments = (ctx: Ctx, u: number): Array<ForumCommentSummary> => {
  const found: Array<CommentCheap> = []
  for (const [c, slot] of slotsOfUser(ctx, u)) {
    const core = communityCore(ctx, c)
    let budget = 20_000
    let n = 0
    for (let j = core.postCount - 1; j >= 0 && budget > 0 && n < USER_SECTION_SIZE; j--) {
      const p = postCheap(ctx, core, j)
      budget -= p.comments + 1
      for (let i = 0; i < p.comments; i++) {
        const cm = commentCheap(ctx, p, i)
        if (cm.slot === slot) {
          found.push(cm)
          n++
        }
      }
    }
  }
  return sortDesc(found, (cm) => cm.createdMs)
    .slice(0, USER_SECTION_SIZE)
    .map((cm) => commentSummary(ctx, cm))
}

export const getForumPost = (ctx: Ctx, id: string): ForumPost | undefined => {
  const p = decodeForumPostId(ctx, id)
  return p === undefined ? undefined : fullPost(ctx, p)
}

/**
 * A thread in reading order: siblings sorted by `sort`, each followed by its replies, so every
 * returned reply comes after its parent. `commentLimit` cuts that order.
 */
export const getThread = (
  ctx: Ctx,
  id: string,
  commentLimit: number,
  sort: CommentSort
): ForumThread | undefined => {
  const p = decodeForumPostId(ctx, id)
  if (p === undefined) return undefined
  const all = Array.from({ length: p.comments }, (_, i) => commentCheap(ctx, p, i))
  const children: Array<Array<CommentCheap>> = all.map(() => [])
  const roots: Array<CommentCheap> = []
  for (const cm of all) (cm.parent < 0 ? roots : children[cm.parent]!).push(cm)
  const key =
    sort === "top"
      ? (cm: CommentCheap) => cm.upvotes
      : sort === "new"
        ? (cm: CommentCheap) => cm.createdMs
        : (cm: CommentCheap) => -cm.createdMs
  const limit = Math.max(0, Math.min(500, Math.floor(commentLimit)))
  const out: Array<readonly [CommentCheap, number]> = []
  const visit = (list: Array<CommentCheap>, depth: number): void => {
    for (const cm of sortDesc(list, key)) {
      if (out.length >= limit) return
      out.push([cm, depth])
      visit(children[cm.i]!, depth + 1)
    }
  }
  visit(roots, 0)
  return { post: fullPost(ctx, p), comments: out.map(([cm, depth]) => fullComment(ctx, cm, depth)) }
}
