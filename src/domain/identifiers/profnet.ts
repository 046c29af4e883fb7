import { fail, looksLikeUrl, ok, type Parsed, urlPath } from "./common.ts"
import type { Hosts } from "./hosts.ts"

/** Profnet identifiers: profile, company and post URLs, slugs, URNs and website domains. */
const personUrnPattern = /^urn:li:fsd_profile:([A-Za-z0-9_-]+)$/
const companyUrnPattern = /^urn:li:fsd_company:(\d+)$/
const activityUrnPattern = /^urn:li:activity:(\d+)$/
const slugPattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/
const domainPattern = /^(?=.{4,253}$)([a-z0-9-]+\.)+[a-z]{2,24}$/

export type ProfnetTarget =
  | { readonly type: "person"; readonly slug: string }
  | { readonly type: "company"; readonly slug: string }
  | { readonly type: "post"; readonly activityId: string; readonly authorSlug: string | undefined }

/** Profnet URL shapes: /in/<slug>, /company/<slug>, /posts/<author>_<words>-activity-<digits>-<x>, /feed/update/urn:li:activity:<digits>. */
export const parseProfnetUrl = (raw: string, hosts: Hosts): Parsed<ProfnetTarget> => {
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
export const parsePerson = (raw: string, hosts: Hosts): Parsed<PersonId> => {
  const text = raw.trim()
  if (personUrnPattern.test(text)) return ok({ urn: text })
  if (text.startsWith("urn:")) {
    return fail(
      "Only person URNs of the form urn:li:fsd_profile:<id> are accepted; company and other URNs are not fetchable here."
    )
  }
  if (looksLikeUrl(text) || text.includes(hosts.profnet)) {
    const parsed = parseProfnetUrl(text, hosts)
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
export const parseCompany = (raw: string, hosts: Hosts): Parsed<CompanyId> => {
  const text = raw.trim()
  const refused = refuseCompanyIds(text)
  if (refused !== undefined) return fail(refused)
  if (urlPath(text, hosts.profnet) !== undefined) {
    const parsed = parseProfnetUrl(text, hosts)
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
export const parsePostsOwner = (raw: string, hosts: Hosts): Parsed<PostsOwner> => {
  const text = raw.trim()
  const refused = refuseCompanyIds(text)
  if (refused !== undefined) return fail(refused)
  if (personUrnPattern.test(text)) return ok({ kind: "person", ref: { urn: text } })
  if (urlPath(text, hosts.profnet) !== undefined) {
    const parsed = parseProfnetUrl(text, hosts)
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
