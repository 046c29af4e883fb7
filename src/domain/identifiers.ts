/**
 * Cleaning what agents send as identifiers: URLs (tracking parameters, `www`/`m` hosts and trailing
 * slashes tolerated), slugs, URNs and website domains. Pure: each returns a cleaned identifier or
 * a message saying what to send instead.
 */
export const hosts = { profnet: "profnet.com", forum: "forum.com", microblog: "microblog.com" } as const

export type Parsed<A> =
  | { readonly ok: true; readonly value: A }
  | { readonly ok: false; readonly message: string }
const ok = <A>(value: A): Parsed<A> => ({ ok: true, value })
const fail = <A>(message: string): Parsed<A> => ({ ok: false, message })

const personUrnPattern = /^urn:li:fsd_profile:([A-Za-z0-9_-]+)$/
const companyUrnPattern = /^urn:li:fsd_company:(\d+)$/
const activityUrnPattern = /^urn:li:activity:(\d+)$/
const slugPattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/
const domainPattern = /^(?=.{4,253}$)([a-z0-9-]+\.)+[a-z]{2,24}$/

/** A URL of `host` (bare, `www.` or `m.`), with or without a scheme: its path segments, or undefined. */
export const urlPath = (raw: string, host: string): ReadonlyArray<string> | undefined => {
  const text = raw.trim()
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`
  let url: URL
  try {
    url = new URL(withScheme)
  } catch {
    return undefined
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return undefined
  const hostname = url.hostname.toLowerCase().replace(/^(www|m)\./, "")
  if (hostname !== host) return undefined
  return url.pathname
    .split("/")
    .filter((segment) => segment.length > 0)
    .map((segment) => decodeURIComponent(segment))
}

export const looksLikeUrl = (raw: string): boolean =>
  /^[a-z]+:\/\//i.test(raw.trim()) || /^[^\s/]+\.[a-z]{2,}\//i.test(raw.trim())

export type ProfnetTarget =
  | { readonly type: "person"; readonly slug: string }
  | { readonly type: "company"; readonly slug: string }
  | { readonly type: "post"; readonly activityId: string; readonly authorSlug: string | undefined }

/** Profnet URL shapes: /in/<slug>, /company/<slug>, /posts/<author>_<words>-activity-<digits>-<x>, /feed/update/urn:li:activity:<digits>. */
export const parseProfnetUrl = (raw: string): Parsed<ProfnetTarget> => {
  const path = urlPath(raw, hosts.profnet)
  if (path === undefined) {
    return fail(
      `Not a ${hosts.profnet} URL. Send a profile (/in/<slug>), company (/company/<slug>) or post URL of ${hosts.profnet}.`
    )
  }
  const [first, second, third] = path
  if (first === "in" && second !== undefined && slugPattern.test(second))
    return ok({ type: "person", slug: second.toLowerCase() })
  if (first === "company" && second !== undefined && slugPattern.test(second)) {
    return ok({ type: "company", slug: second.toLowerCase() })
  }
  if (first === "posts" && second !== undefined) {
    const match = /^(.+?)_.*-activity-(\d{10,25})(?:-[A-Za-z0-9]+)?$/.exec(second)
    if (match !== null)
      return ok({ type: "post", activityId: match[2]!, authorSlug: match[1]!.toLowerCase() })
  }
  if (first === "feed" && second === "update" && third !== undefined) {
    const match = activityUrnPattern.exec(third)
    if (match !== null) return ok({ type: "post", activityId: match[1]!, authorSlug: undefined })
  }
  return fail(`This ${hosts.profnet} URL is not a profile, company or post URL.`)
}

export type PersonId = { readonly slug: string } | { readonly urn: string }

/** getProfile: a profile URL, the slug after /in/, or urn:li:fsd_profile:<id>. */
export const parsePerson = (raw: string): Parsed<PersonId> => {
  const text = raw.trim()
  if (personUrnPattern.test(text)) return ok({ urn: text })
  if (text.startsWith("urn:")) {
    return fail(
      "Only person URNs of the form urn:li:fsd_profile:<id> are accepted; company and other URNs are not fetchable here."
    )
  }
  if (looksLikeUrl(text) || text.includes(hosts.profnet)) {
    const parsed = parseProfnetUrl(text)
    if (!parsed.ok) return parsed
    if (parsed.value.type === "person") return ok({ slug: parsed.value.slug })
    return fail(
      parsed.value.type === "company"
        ? "That is a company URL; fetch companies with getCompany (GET /v1/profnet/companies)."
        : "That is a post URL; reading one specific post is not provided. Use getPosts with the author's profile."
    )
  }
  if (slugPattern.test(text)) return ok({ slug: text.toLowerCase() })
  return fail(
    "Send a profile URL, the slug after /in/, or a URN urn:li:fsd_profile:<id>. This call does not search by name; use searchPeople."
  )
}

export type CompanyId = { readonly slug: string } | { readonly domain: string }

const refuseCompanyIds = (text: string): string | undefined =>
  companyUrnPattern.test(text) || /^\d+$/.test(text)
    ? "Company URNs and numeric ids are search-filter inputs only, never fetch identifiers. Send the company URL, the slug after /company/, or its website domain."
    : undefined

export const cleanDomain = (raw: string): string | undefined => {
  const text = raw.trim().toLowerCase()
  const host = text
    .replace(/^[a-z]+:\/\//, "")
    .split(/[/?#]/)[0]!
    .replace(/^www\./, "")
  return domainPattern.test(host) ? host : undefined
}

/** getCompany: a company URL, the slug after /company/, or a website domain. */
export const parseCompany = (raw: string): Parsed<CompanyId> => {
  const text = raw.trim()
  const refused = refuseCompanyIds(text)
  if (refused !== undefined) return fail(refused)
  if (urlPath(text, hosts.profnet) !== undefined) {
    const parsed = parseProfnetUrl(text)
    if (!parsed.ok) return parsed
    if (parsed.value.type === "company") return ok({ slug: parsed.value.slug })
    return fail(
      parsed.value.type === "person"
        ? "That is a profile URL; fetch people with getProfile (GET /v1/profnet/profiles)."
        : "That is a post URL; use getPosts with the company's URL or slug."
    )
  }
  if (text.includes(".")) {
    const domain = cleanDomain(text)
    return domain === undefined ? fail("Not a valid website domain (e.g. example.com).") : ok({ domain })
  }
  if (slugPattern.test(text)) return ok({ slug: text.toLowerCase() })
  return fail(
    "Send a company URL, the slug after /company/, or a website domain. There is no search by company name."
  )
}

export type PostsOwner =
  | { readonly kind: "person"; readonly ref: PersonId }
  | { readonly kind: "company"; readonly ref: CompanyId }
  | { readonly kind: "either"; readonly slug: string }

/** getPosts: person or company URL, slug (detected), person URN, or a company website domain. */
export const parsePostsOwner = (raw: string): Parsed<PostsOwner> => {
  const text = raw.trim()
  const refused = refuseCompanyIds(text)
  if (refused !== undefined) return fail(refused)
  if (personUrnPattern.test(text)) return ok({ kind: "person", ref: { urn: text } })
  if (urlPath(text, hosts.profnet) !== undefined) {
    const parsed = parseProfnetUrl(text)
    if (!parsed.ok) return parsed
    if (parsed.value.type === "person") return ok({ kind: "person", ref: { slug: parsed.value.slug } })
    if (parsed.value.type === "company") return ok({ kind: "company", ref: { slug: parsed.value.slug } })
    return fail("Reading one specific post by URL is not provided. Send the author's profile or company URL.")
  }
  if (text.includes(".")) {
    const domain = cleanDomain(text)
    return domain === undefined
      ? fail("Not a valid website domain (e.g. example.com).")
      : ok({ kind: "company", ref: { domain } })
  }
  if (slugPattern.test(text)) return ok({ kind: "either", slug: text.toLowerCase() })
  return fail("Send a person or company URL, a slug, a person URN or a company website domain.")
}

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
export const parseForumUrl = (raw: string): Parsed<ForumTarget> => {
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
export const forumUrlOf = (target: ForumTarget): string => {
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

const isForumUrl = (text: string) => looksLikeUrl(text) || text.toLowerCase().includes(hosts.forum)
const forumTargetName = {
  community: "a community",
  user: "a user profile",
  post: "a post",
  comment: "a comment"
}

/** A forum community name: `name`, `c/name`, `r/name` or a community URL. */
export const parseCommunity = (raw: string): Parsed<string> => {
  const text = raw.trim()
  if (isForumUrl(text)) {
    const parsed = parseForumUrl(text)
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
export const parseForumUser = (raw: string): Parsed<string> => {
  const text = raw.trim()
  if (isForumUrl(text)) {
    const parsed = parseForumUrl(text)
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
export const parseForumPostId = (raw: string): Parsed<string> => {
  const text = raw.trim()
  if (isForumUrl(text)) {
    const parsed = parseForumUrl(text)
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

const handlePattern = /^[A-Za-z0-9_]{1,15}$/
const tweetIdPattern = /^\d{1,25}$/
/** First path segments of the microblog that are pages, not handles. */
const microblogPages = new Set(["i", "home", "explore", "search", "settings", "notifications", "messages"])
const microblogPagesToo = new Set([
  "hashtag",
  "intent",
  "share",
  "compose",
  "login",
  "signup",
  "tos",
  "privacy"
])

export type MicroblogTarget =
  | { readonly type: "profile"; readonly handle: string }
  | { readonly type: "tweet"; readonly id: string }

/** Microblog URL shapes: /<handle>[/…], /<handle>/status/<id>[/…], /i/web/status/<id>. */
export const parseMicroblogUrl = (raw: string): Parsed<MicroblogTarget> => {
  const path = urlPath(raw, hosts.microblog)
  if (path === undefined) {
    return fail(
      `Not a ${hosts.microblog} URL. Send a profile (${hosts.microblog}/<handle>) or status (${hosts.microblog}/<handle>/status/<id>) URL.`
    )
  }
  const [first, second, third, fourth] = path
  const status =
    second === "status" || second === "statuses"
      ? third
      : first === "i" && second === "web" && third === "status"
        ? fourth
        : undefined
  if (status !== undefined && tweetIdPattern.test(status)) return ok({ type: "tweet", id: status })
  const page = first?.toLowerCase() ?? ""
  if (
    status === undefined &&
    handlePattern.test(page) &&
    !microblogPages.has(page) &&
    !microblogPagesToo.has(page)
  ) {
    return ok({ type: "profile", handle: page })
  }
  return fail(`This ${hosts.microblog} URL is not a profile or status URL.`)
}

/** The clean URL of a microblog target, as the platform resolves it. */
export const microblogUrlOf = (target: MicroblogTarget): string =>
  target.type === "profile"
    ? `https://${hosts.microblog}/${target.handle}`
    : `https://${hosts.microblog}/i/web/status/${target.id}`

const isMicroblogUrl = (text: string) => looksLikeUrl(text) || text.toLowerCase().includes(hosts.microblog)

export type MicroblogAccount = { readonly handle: string } | { readonly id: string }

/** A microblog handle (with or without @, case-insensitive), profile URL or numeric user id. */
export const parseMicroblogAccount = (raw: string): Parsed<MicroblogAccount> => {
  const text = raw.trim()
  if (isMicroblogUrl(text)) {
    const parsed = parseMicroblogUrl(text)
    if (!parsed.ok) return parsed
    if (parsed.value.type === "profile") return ok({ handle: parsed.value.handle })
    return fail("That is a status URL; read one tweet with getTweet, or send the author's handle.")
  }
  const candidate = text.replace(/^@/, "")
  if (/^\d{1,20}$/.test(candidate)) return ok({ id: candidate })
  if (handlePattern.test(candidate)) return ok({ handle: candidate.toLowerCase() })
  return fail(
    `Send a handle (letters, digits, _; at most 15), a ${hosts.microblog}/<handle> URL or a numeric user id.`
  )
}

/** A tweet id or status URL (…/<handle>/status/<id>, /i/web/status/<id>). */
export const parseTweetId = (raw: string): Parsed<string> => {
  const text = raw.trim()
  if (isMicroblogUrl(text)) {
    const parsed = parseMicroblogUrl(text)
    if (!parsed.ok) return parsed
    if (parsed.value.type === "tweet") return ok(parsed.value.id)
    return fail("That is a profile URL; list an account's tweets with getTweets, or send a status URL.")
  }
  return tweetIdPattern.test(text)
    ? ok(text)
    : fail(`Send a numeric tweet id or a ${hosts.microblog}/<handle>/status/<id> URL.`)
}
