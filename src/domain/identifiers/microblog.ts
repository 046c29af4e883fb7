import { fail, looksLikeUrl, ok, type Parsed, urlPath } from "./common.ts"
import type { Hosts } from "./hosts.ts"

/** Microblog identifiers: handles, user ids, status URLs. */
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
export const parseMicroblogUrl = (raw: string, hosts: Hosts): Parsed<MicroblogTarget> => {
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
export const microblogUrlOf = (target: MicroblogTarget, hosts: Hosts): string =>
  target.type === "profile"
    ? `https://${hosts.microblog}/${target.handle}`
    : `https://${hosts.microblog}/i/web/status/${target.id}`

const isMicroblogUrl = (text: string, hosts: Hosts) =>
  looksLikeUrl(text) || text.toLowerCase().includes(hosts.microblog)

export type MicroblogAccount = { readonly handle: string } | { readonly id: string }

/** A microblog handle (with or without @, case-insensitive), profile URL or numeric user id. */
export const parseMicroblogAccount = (raw: string, hosts: Hosts): Parsed<MicroblogAccount> => {
  const text = raw.trim()
  if (isMicroblogUrl(text, hosts)) {
    const parsed = parseMicroblogUrl(text, hosts)
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
export const parseTweetId = (raw: string, hosts: Hosts): Parsed<string> => {
  const text = raw.trim()
  if (isMicroblogUrl(text, hosts)) {
    const parsed = parseMicroblogUrl(text, hosts)
    if (!parsed.ok) return parsed
    if (parsed.value.type === "tweet") return ok(parsed.value.id)
    return fail("That is a profile URL; list an account's tweets with getTweets, or send a status URL.")
  }
  return tweetIdPattern.test(text)
    ? ok(text)
    : fail(`Send a numeric tweet id or a ${hosts.microblog}/<handle>/status/<id> URL.`)
}
