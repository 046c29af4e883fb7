import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import type { PeopleSearchResult } from "../../src/contract/records.ts"
import * as R from "../../src/contract/records.ts"
import type { Page } from "../../src/upstream/contract.ts"
import * as C from "../../src/upstream/contract.ts"
import { InvalidCursor, makeWorld, type World, warmUp } from "../../src/upstream/world/index.ts"

const w = makeWorld("seed-a")
const twin = makeWorld("seed-a")
const other = makeWorld("seed-b")

const ok = <A>(p: Page<A> | InvalidCursor | undefined): Page<A> => {
  if (p === undefined || p === InvalidCursor) throw new Error(`expected a page, got ${String(p)}`)
  return p
}

/** Public people from a search, the usual way a caller meets them. */
const people = (world: World, keywords: string): Array<PeopleSearchResult> =>
  ok(world.searchPeople({ keywords }, undefined, 30)).items.filter((r) => !r.is_anonymous)

/** A sample of calls across every platform; deep-equal across worlds means deterministic. */
const sample = (world: World) => {
  const person = people(world, "engineer")[0]!
  const company = world.getCompany({
    slug: world.getPerson({ slug: person.public_identifier! })!.current_position!.company_slug!
  })!
  const forum = ok(world.forumSearch({ query: "python" }, undefined))
  const firstPost = forum.items[0]!
  const tweets = ok(world.microblogSearch({ query: "rust" }, undefined))
  return {
    search: world.searchPeople({ keywords: "senior engineer" }, undefined, 20),
    person: world.getPerson({ slug: person.public_identifier! }),
    byUrn: world.getPerson({ urn: person.urn }),
    posts: world.getPersonPosts(person.public_identifier!, undefined),
    company,
    companyPosts: world.getCompanyPosts(company.slug, undefined),
    forum,
    community: world.getCommunity("python", true),
    feed: world.getCommunityPosts("python", "top", "past_year", undefined),
    thread: world.getThread(firstPost.id, 50, "top"),
    user: world.getForumUser(firstPost.kind === "post" ? firstPost.author : "", ["posts", "comments"]),
    tweets,
    profile: world.getMicroblogProfile({ handle: tweets.items[0]!.author.handle }),
    timeline: world.getTweets(tweets.items[0]!.author.handle, true, undefined)
  }
}

describe("determinism", () => {
  it("answers identically for the same seed", () => {
    expect(sample(twin)).toEqual(sample(w))
  })

  it("answers the same after warmUp builds the search tables ahead of time", () => {
    const warm = makeWorld("seed-a")
    warmUp(warm)
    expect(warm.searchPeople({ keywords: "designer" }, undefined, 10)).toEqual(
      w.searchPeople({ keywords: "designer" }, undefined, 10)
    )
  })

  it("answers differently for another seed", () => {
    const a = sample(w)
    const b = sample(other)
    expect(b.search).not.toEqual(a.search)
    expect(b.person).not.toEqual(a.person)
    expect(b.forum).not.toEqual(a.forum)
    expect(b.tweets).not.toEqual(a.tweets)
  })

  it("does not accept identifiers or cursors of another seed's world", () => {
    const p = people(w, "engineer")[0]!
    expect(other.getPerson({ slug: p.public_identifier! })).toBeUndefined()
    const page = ok(w.searchPeople({ keywords: "engineer" }, undefined, 10))
    expect(other.searchPeople({ keywords: "engineer" }, page.next_cursor!, 10)).toBe(InvalidCursor)
  })
})

describe("profnet entities", () => {
  it("returns full profiles for public search results", () => {
    for (const r of people(w, "manager")) {
      const p = w.getPerson({ slug: r.public_identifier! })!
      expect(p.urn).toBe(r.urn)
      expect(p.name).toBe(r.name)
      expect(p.headline).toBe(r.position)
      expect(w.getPerson({ urn: r.urn })).toEqual(p)
      expect(p.experience[0]!.end).toBeNull()
      expect(p.urn).toMatch(/^urn:li:fsd_profile:ACoAA[A-Za-z0-9_-]+$/)
    }
  })

  it("hides anonymous members: no slug, a generic name, and an urn that cannot be fetched", () => {
    const results = ok(w.searchPeople({ keywords: "engineer" }, undefined, 30))
    let anonymous = results.items.filter((r) => r.is_anonymous)
    for (let cursor = results.next_cursor; anonymous.length === 0 && cursor !== null; ) {
      const next = ok(w.searchPeople({ keywords: "engineer" }, cursor, 30))
      anonymous = next.items.filter((r) => r.is_anonymous)
      cursor = next.next_cursor
    }
    expect(anonymous.length).toBeGreaterThan(0)
    for (const r of anonymous) {
      expect(r.name).toBe("Profnet Member")
      expect(r.public_identifier).toBeNull()
      expect(w.getPerson({ urn: r.urn })).toBeUndefined()
      expect(w.getPersonPosts(r.urn, undefined)).toBeUndefined()
    }
  })

  it("keeps a person's current company real and lists them among its people", () => {
    for (const r of people(w, "designer").slice(0, 5)) {
      const p = w.getPerson({ slug: r.public_identifier! })!
      const company = w.getCompany({ slug: p.current_position!.company_slug! })!
      expect(company.name).toBe(p.current_position!.company_name)
      const everyone = ok(w.searchPeople({ current_company: company.slug }, undefined, 10))
      expect(everyone.total_matches).toBeGreaterThan(0)
      expect(everyone.total_matches).toBeLessThanOrEqual(company.employee_count)
      const staff = ok(
        w.searchPeople({ keywords: p.first_name, current_company: company.slug }, undefined, 30)
      )
      expect(staff.items.map((x) => x.urn)).toContain(p.urn)
      for (const job of p.experience)
        expect(w.getCompany({ slug: job.company_slug! })?.name).toBe(job.company_name)
    }
  })

  it("agrees on a company's domain, slug, URN and numeric id", () => {
    const slugs = people(w, "analyst").map(
      (r) => w.getPerson({ slug: r.public_identifier! })!.current_position!.company_slug!
    )
    for (const slug of slugs) {
      const c = w.getCompany({ slug })!
      expect(c.slug).toBe(slug)
      expect(c.urn).toBe(`urn:li:fsd_company:${c.numeric_id}`)
      expect(c.numeric_id).toMatch(/^\d+$/)
      expect(c.website).toBe(`https://${c.domain}`)
      expect(c.url).toBe(`https://profnet.com/company/${slug}`)
      expect(w.getCompany({ domain: c.domain })).toEqual(c)
      expect(w.getCompany({ domain: `https://www.${c.domain}/about` })).toEqual(c)
      expect(w.companyByNumericId(c.numeric_id)).toEqual(c)
    }
  })

  it("suggests real nearby domains for a misspelled one", () => {
    const c = w.getCompany({
      slug: w.getPerson({ slug: people(w, "recruiter")[0]!.public_identifier! })!.current_position!
        .company_slug!
    })!
    const typo = c.domain.replace(/^(.)(.)/, "$2$1")
    expect(w.getCompany({ domain: typo })).toBeUndefined()
    const near = w.closestDomains(typo, 5)
    expect(near).toHaveLength(5)
    expect(near[0]).toBe(c.domain)
    for (const d of near) expect(w.getCompany({ domain: d })?.domain).toBe(d)
  })

  it("pages a person's posts newest first until exhausted", () => {
    const author = people(w, "founder").find(
      (r) => ok(w.getPersonPosts(r.public_identifier!, undefined)).items.length > 3
    )!
    const all = []
    let cursor: string | undefined
    do {
      const page = ok(w.getPersonPosts(author.public_identifier!, cursor))
      expect(page.items.length).toBeLessThanOrEqual(10)
      all.push(...page.items)
      cursor = page.next_cursor ?? undefined
    } while (cursor !== undefined)
    expect(new Set(all.map((p) => p.urn)).size).toBe(all.length)
    const times = all.map((p) => p.created_at)
    expect([...times].sort().reverse()).toEqual(times)
    for (const p of all) {
      expect(p.author.identifier).toBe(author.public_identifier)
      expect(p.urn).toMatch(/^urn:li:activity:\d{19}$/)
      expect(p.url).toMatch(
        /^https:\/\/profnet\.com\/posts\/[a-z0-9-]+_[a-z0-9-]+-activity-\d{19}-[A-Za-z0-9]{4}$/
      )
    }
    expect(w.getPersonPosts(author.public_identifier!, "bogus")).toBe(InvalidCursor)
  })

  it("gives most people some posts", () => {
    const sampled = people(w, "engineer")
    const withPosts = sampled.filter(
      (r) => ok(w.getPersonPosts(r.public_identifier!, undefined)).items.length > 0
    )
    expect(withPosts.length / sampled.length).toBeGreaterThan(0.5)
  })
})

describe("contract", () => {
  it("emits records that decode with the contract schemas and survive JSON", () => {
    const s = sample(w)
    const check = <S extends Schema.Constraint & { readonly DecodingServices: never }>(
      schema: S,
      value: unknown
    ) => {
      expect(JSON.parse(JSON.stringify(value))).toEqual(value)
      expect(Schema.decodeUnknownSync(schema)(value)).toEqual(value)
    }
    check(C.Page(R.PeopleSearchResult), s.search)
    check(R.Person, s.person)
    check(C.Page(R.ProfnetPost), s.posts)
    check(R.Company, s.company)
    check(C.Page(R.ForumSearchItem), s.forum)
    check(R.Community, s.community)
    check(C.Page(R.ForumPostSummary), s.feed)
    check(R.ForumThread, s.thread)
    check(R.ForumUser, s.user)
    check(C.Page(R.Tweet), s.tweets)
    check(R.MicroblogProfile, s.profile)
    check(R.ProfnetUrlResolution, w.resolveProfnetUrl(s.company.url))
    check(R.ForumUrlResolution, w.resolveForumUrl(s.community!.url))
    check(R.MicroblogUrlResolution, w.resolveMicroblogUrl(s.profile!.url))
  })
})

describe("forged and unknown identifiers", () => {
  const p = people(w, "engineer")[0]!
  const slug = p.public_identifier!
  const c = w.getPerson({ slug })!.current_position!.company_slug!
  const company = w.getCompany({ slug: c })!
  const post = ok(w.getCompanyPosts(c, undefined)).items[0]!
  const forumPost = ok(w.forumSearch({ query: "cooking" }, undefined)).items[0]!
  const tweet = ok(w.microblogSearch({ query: "chess" }, undefined)).items[0]!
  const bump = (s: string, at: number): string => {
    const ch = s[at]!
    const alt = ch === "0" ? "1" : /\d/.test(ch) ? "0" : ch === "a" ? "b" : "a"
    return s.slice(0, at) + alt + s.slice(at + 1)
  }

  it("rejects them with undefined", () => {
    expect(w.getPerson({ slug: slug.replace(/^[a-z]+/, "zed") })).toBeUndefined()
    expect(w.getPerson({ slug: bump(slug, slug.length - 1) })).toBeUndefined()
    expect(w.getPerson({ slug: "john-doe" })).toBeUndefined()
    expect(w.getPerson({ urn: bump(p.urn, p.urn.length - 1) })).toBeUndefined()
    expect(w.getPerson({ urn: "urn:li:fsd_profile:nope" })).toBeUndefined()
    expect(w.getCompany({ slug: "acme-widgets" })).toBeUndefined()
    expect(w.getCompany({ domain: "example.com" })).toBeUndefined()
    expect(w.getCompany({ domain: company.domain.replace(/\.[a-z]+$/, ".org") })).toBeUndefined()
    expect(w.companyByNumericId(bump(company.numeric_id, 0))).toBeUndefined()
    expect(w.getProfnetPost(bump(post.urn, post.urn.length - 3))).toBeUndefined()
    expect(w.getForumPosts([bump(forumPost.id, 2), "zzzzzz"])).toEqual([undefined, undefined])
    expect(w.getThread("0", 10, "top")).toBeUndefined()
    expect(w.getCommunity("definitelynotacommunity", false)).toBeUndefined()
    expect(w.getCommunityPosts("definitelynotacommunity", "new", "all_time", undefined)).toBeUndefined()
    expect(w.getForumUser("Nobody-Here-0000", [])).toBeUndefined()
    expect(w.getMicroblogProfile({ handle: "nobody12345" })).toBeUndefined()
    expect(w.getMicroblogProfile({ id: bump(tweet.author.id, 3) })).toBeUndefined()
    expect(w.getTweet(bump(tweet.id, 18))).toBeUndefined()
    expect(w.getTweets("nobody12345", true, undefined)).toBeUndefined()
    expect(w.resolveProfnetUrl("https://example.com/in/" + slug)).toBeUndefined()
  })
})
