import type {
  ForumUrlResolution,
  MicroblogUrlResolution,
  ProfnetUrlResolution
} from "../../contract/records.ts"
import { companyCore, companyIndexBySlug, companyUrl } from "./companies.ts"
import type { Ctx } from "./context.ts"
import { communityCore, communityIndexByName, forumUserCore, forumUserIndexByName } from "./forum-core.ts"
import {
  commentSummary,
  decodeCommentId,
  decodeForumPostId,
  forumPostId,
  postSummary
} from "./forum-posts.ts"
import { accountCore, accountIndexByHandle } from "./microblog.ts"
import { getTweet } from "./microblog-replies.ts"
import { personCore, personIndexBySlug, profileUrl } from "./people.ts"
import { profnetPostById } from "./profnet-posts.ts"
import { platformPath } from "./text.ts"

/** What a platform URL points at. The host must be the platform's; the slug part of post URLs is not checked. */
export const resolveProfnetUrl = (ctx: Ctx, url: string): ProfnetUrlResolution | undefined => {
  const path = platformPath(url, ctx.hosts.profnet)
  if (path === undefined || path.length < 2) return undefined
  const [kind, ref] = path as [string, string]
  if (kind === "in") {
    const i = personIndexBySlug(ctx, ref)
    if (i === undefined) return undefined
    const p = personCore(ctx, i)
    return { type: "person", id: p.urn, handle: p.slug, canonical_url: profileUrl(ctx, p.slug) }
  }
  if (kind === "company") {
    const c = companyIndexBySlug(ctx, ref)
    if (c === undefined) return undefined
    const co = companyCore(ctx, c)
    return { type: "company", id: co.urn, handle: co.slug, canonical_url: companyUrl(ctx, co.slug) }
  }
  const activity =
    kind === "posts"
      ? /-activity-(\d{19})(?:-|$)/.exec(ref)?.[1]
      : kind === "feed" && path[1] === "update"
        ? /^urn:li:activity:(\d{19})$/.exec(path[2] ?? "")?.[1]
        : undefined
  const post = activity === undefined ? undefined : profnetPostById(ctx, activity)
  return post === undefined
    ? undefined
    : { type: "post", id: post.urn, handle: post.author.identifier, canonical_url: post.url }
}

export const resolveForumUrl = (ctx: Ctx, url: string): ForumUrlResolution | undefined => {
  const path = platformPath(url, ctx.hosts.forum)
  if (path === undefined || path.length < 2) return undefined
  const none = { community: null, post_id: null, username: null }
  if (path[0] === "user" || path[0] === "u") {
    const u = forumUserIndexByName(ctx, path[1]!)
    if (u === undefined) return undefined
    const core = forumUserCore(ctx, u)
    return { type: "user", id: core.id, ...none, username: core.username, canonical_url: core.profileUrl }
  }
  const postRef =
    path[0] === "comments" ? path[1] : path[0] === "c" && path[2] === "comments" ? path[3] : undefined
  if (postRef === undefined && path[0] === "c" && path.length === 2) {
    const c = communityIndexByName(ctx, path[1]!)
    if (c === undefined) return undefined
    const core = communityCore(ctx, c)
    return { type: "community", id: core.id, ...none, community: core.name, canonical_url: core.url }
  }
  const post = postRef === undefined ? undefined : decodeForumPostId(ctx, postRef)
  if (post === undefined) return undefined
  const commentRef = path[0] === "c" ? path[5] : undefined
  if (commentRef !== undefined) {
    const cm = decodeCommentId(ctx, commentRef)
    if (cm === undefined || cm.post.key !== post.key) return undefined
    const s = commentSummary(ctx, cm)
    return {
      type: "comment",
      id: s.id,
      community: s.community,
      post_id: s.post_id,
      username: null,
      canonical_url: s.permalink
    }
  }
  const s = postSummary(ctx, post)
  return {
    type: "post",
    id: forumPostId(ctx, post.key),
    ...none,
    community: s.community,
    canonical_url: s.permalink
  }
}

export const resolveMicroblogUrl = (ctx: Ctx, url: string): MicroblogUrlResolution | undefined => {
  const path = platformPath(url, ctx.hosts.microblog)
  if (path === undefined || path.length === 0) return undefined
  const statusId =
    path[1] === "status"
      ? path[2]
      : path[0] === "i" && path[1] === "web" && path[2] === "status"
        ? path[3]
        : undefined
  if (statusId !== undefined) {
    const t = getTweet(ctx, statusId)
    return t === undefined
      ? undefined
      : { type: "tweet", id: t.id, handle: t.author.handle, canonical_url: t.url }
  }
  if (path.length !== 1) return undefined
  const a = accountIndexByHandle(ctx, path[0]!)
  if (a === undefined) return undefined
  const c = accountCore(ctx, a)
  return { type: "profile", id: c.id, handle: c.handle, canonical_url: c.url }
}
