import { describe, expect, it } from "vitest"
import { defaultHosts, type Hosts } from "../../src/domain/identifiers/index.ts"
import type { Page } from "../../src/upstream/contract.ts"
import { InvalidCursor, makeWorld } from "../../src/upstream/world/index.ts"

const hosts: Hosts = { profnet: "pro.example", forum: "board.example.org", microblog: "chirp.test" }
const seed = "hosts"
const w = makeWorld(seed, hosts)
const onDefaults = makeWorld(seed)

const ok = <A>(p: Page<A> | InvalidCursor | undefined): Page<A> => {
  if (p === undefined || p === InvalidCursor) throw new Error(`expected a page, got ${String(p)}`)
  return p
}
const hostOf = (url: string) => new URL(url).host
/** The same URL on the platform's default host. */
const onDefaultHost = (url: string, platform: keyof Hosts) =>
  url.replace(hosts[platform], defaultHosts[platform])

describe("a world on other hosts", () => {
  it("emits profnet URLs on its profnet host, which resolve; the default host's do not", () => {
    const person = w.getPerson({
      slug: ok(w.searchPeople({ keywords: "manager" }, undefined, 10)).items.find((r) => !r.is_anonymous)!
        .public_identifier!
    })!
    const company = w.getCompany({ slug: person.current_position!.company_slug! })!
    const post = ok(w.getCompanyPosts(company.slug, undefined)).items[0]!
    for (const url of [person.profile_url, company.url, post.url]) {
      expect(hostOf(url)).toBe(hosts.profnet)
      expect(w.resolveProfnetUrl(url)?.canonical_url).toBe(url)
      expect(w.resolveProfnetUrl(onDefaultHost(url, "profnet"))).toBeUndefined()
    }
    // Hosts change URLs only: the same seed makes the same people.
    expect(onDefaults.getPerson({ slug: person.public_identifier })).toEqual({
      ...person,
      profile_url: onDefaultHost(person.profile_url, "profnet")
    })
    // A company filter given as a URL is read on the world's host.
    const filtered = w.searchPeople({ keywords: "manager", current_company: company.url }, undefined, 10)
    expect(ok(filtered).items.length).toBeGreaterThan(0)
  })

  it("emits forum and microblog URLs on their hosts, which resolve", () => {
    const summary = ok(w.forumSearch({ query: "python" }, undefined)).items[0]!
    if (summary.kind !== "post") throw new Error("expected a post")
    const community = w.getCommunity(summary.community, false)!
    const user = w.getForumUser(summary.author, [])!
    for (const url of [summary.permalink, community.url, user.profile_url]) {
      expect(hostOf(url)).toBe(hosts.forum)
      expect(w.resolveForumUrl(url)?.canonical_url).toBe(url)
      expect(w.resolveForumUrl(onDefaultHost(url, "forum"))).toBeUndefined()
    }
    expect(w.getForumPosts([summary.permalink])[0]?.id).toBe(summary.id)

    const tweet = ok(w.microblogSearch({ query: "python" }, undefined)).items[0]!
    const profile = w.getMicroblogProfile({ handle: tweet.author.handle })!
    for (const url of [tweet.url, profile.url]) {
      expect(hostOf(url)).toBe(hosts.microblog)
      expect(w.resolveMicroblogUrl(url)?.canonical_url).toBe(url)
      expect(w.resolveMicroblogUrl(onDefaultHost(url, "microblog"))).toBeUndefined()
    }
  })
})
