import { fail, looksLikeUrl, ok, type Parsed, urlPath } from "./common.ts"
import type { Hosts } from "./hosts.ts"

/** Forum identifiers: communities, users, post ids and permalinks. */
const forumIdPattern = /^[a-z0-9]{1,12}$/
const communityPattern = /^[A-Za-z0-9_]{2,64}$/
const forumUserPattern = /^[A-Za-z0-9_-]{3,32}$/

export type ForumTarget =
  | { readonly type: "community"; readonly name: string }
  | { readonly type: "user"; readonly username: string }
  | { readonly type: "post"; readonly id: string }
  | {
      readonly type: "comment"
      readonly community: string
      readonly postId: string
      readonly commentId: string
    }

/**
 * Forum URL shapes: /c/<name>/… (or /r/), /c/<name>/comments/<post>/<slug>/[<comment>/],
 * /comments/<post>/, /u/<name>/… (or /user/).
 */
export const parseForumUrl = (raw: string, hosts: Hosts): Parsed<ForumTarget> => {
  const path = urlPath(raw, hosts.forum)
  if (path === undefined) {
    return fail(`Not a ${hosts.forum} URL. Send a community, post, comment or user URL of ${hosts.forum}.`)
  }
  const [first, second, third, fourth, , sixth] = path.map((segment) => segment.toLowerCase())
  if ((first === "u" || first === "user") && second !== undefined && forumUserPattern.test(second)) {
    return ok({ type: "user", username: second })
  }
  const postId = first === "comments" ? second : third === "comments" ? fourth : undefined
  if ((first === "c" || first === "r") && second !== undefined && communityPattern.test(second)) {
    if (third !== "comments") return ok({ type: "community", name: second })
    if (postId !== undefined && forumIdPattern.test(postId)) {
      if (sixth === undefined) return ok({ type: "post", id: postId })
      if (forumIdPattern.test(sixth))
        return ok({ type: "comment", community: second, postId, commentId: sixth })
    }
  }
  if (first === "comments" && postId !== undefined && forumIdPattern.test(postId))
    return ok({ type: "post", id: postId })
  return fail(`This ${hosts.forum} URL is not a community, post, comment or user URL.`)
}

/** The clean URL of a forum target, as the platform resolves it. */
export const forumUrlOf = (target: ForumTarget, hosts: Hosts): string => {
  const base = `https://${hosts.forum}`
  switch (target.type) {
    case "community":
      return `${base}/c/${target.name}/`
    case "user":
      return `${base}/user/${target.username}/`
    case "post":
      return `${base}/comments/${target.id}/`
    case "comment":
      return `${base}/c/${target.community}/comments/${target.postId}/_/${target.commentId}/`
  }
}

const isForumUrl = (text: string, hosts: Hosts) =>
  looksLikeUrl(text) || text.toLowerCase().includes(hosts.forum)
const forumTargetName = {
  community: "a community",
  user: "a user profile",
  post: "a post",
  comment: "a comment"
}

/** A forum community name: `name`, `c/name`, `r/name` or a community URL. */
export const parseCommunity = (raw: string, hosts: Hosts): Parsed<string> => {
  const text = raw.trim()
  if (isForumUrl(text, hosts)) {
    const parsed = parseForumUrl(text, hosts)
    if (!parsed.ok) return parsed
    if (parsed.value.type === "community") return ok(parsed.value.name)
    return fail(
      `That URL points at ${forumTargetName[parsed.value.type]}, not a community. Send a community name or a ${hosts.forum}/c/<name> URL.`
    )
  }
  const name = text.replace(/^\/?(c|r)\//i, "").replace(/\/$/, "")
  if (!communityPattern.test(name)) {
    return fail(
      `Send a community name without the prefix (e.g. "programming") or a ${hosts.forum}/c/<name> URL.`
    )
  }
  return ok(name.toLowerCase())
}

/** A forum username (case-insensitive): `name`, `u/name` or a profile URL. */
export const parseForumUser = (raw: string, hosts: Hosts): Parsed<string> => {
  const text = raw.trim()
  if (isForumUrl(text, hosts)) {
    const parsed = parseForumUrl(text, hosts)
    if (!parsed.ok) return parsed
    if (parsed.value.type === "user") return ok(parsed.value.username)
    return fail(
      `That URL points at ${forumTargetName[parsed.value.type]}, not a user. Send a username or a ${hosts.forum}/user/<name> URL.`
    )
  }
  const name = text.replace(/^\/?(u|user)\//i, "").replace(/\/$/, "")
  if (!forumUserPattern.test(name))
    return fail(`Send a username (without u/) or a ${hosts.forum}/user/<name> URL.`)
  return ok(name.toLowerCase())
}

/** A forum post id or permalink (a comment's permalink names its post). */
export const parseForumPostId = (raw: string, hosts: Hosts): Parsed<string> => {
  const text = raw.trim()
  if (isForumUrl(text, hosts)) {
    const parsed = parseForumUrl(text, hosts)
    if (!parsed.ok) return parsed
    if (parsed.value.type === "post") return ok(parsed.value.id)
    if (parsed.value.type === "comment") return ok(parsed.value.postId)
    return fail(`That URL points at ${forumTargetName[parsed.value.type]}, not a post permalink.`)
  }
  const id = text.toLowerCase()
  return forumIdPattern.test(id)
    ? ok(id)
    : fail("Send forum post ids (base36, e.g. 1abc2d) or post permalinks.")
}
