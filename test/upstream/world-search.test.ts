import { describe, expect, it } from "vitest"
import type { ForumSearchItem, Tweet } from "../../src/contract/records.ts"
import type { ForumSearchQuery, Page, PeopleQuery } from "../../src/upstream/contract.ts"
import { InvalidCursor, LIMITS, makeWorld } from "../../src/upstream/world/index.ts"

const w = makeWorld("search")

const ok = <A>(p: Page<A> | InvalidCursor | undefined): Page<A> => {
  if (p === undefined || p === InvalidCursor) throw new Error(`expected a page, got ${String(p)}`)
  return p
}

const words = (s: string): Array<string> => s.toLowerCase().split(/[^a-z0-9]+/)

/** Follows cursors to the end, checking each page against the first. */
const drain = <A>(
  next: (cursor: string | undefined) => Page<A> | InvalidCursor | undefined
): Array<Page<A>> => {
  const pages = [ok(next(undefined))]
  while (pages.at(-1)!.next_cursor !== null && pages.length < 100)
    pages.push(ok(next(pages.at(-1)!.next_cursor!)))
  return pages
}

const peoplePages = (q: PeopleQuery, limit = 30) => drain((c) => w.searchPeople(q, c, limit))

describe("people search", () => {
  it("finds people by first name", () => {
    const page = ok(w.searchPeople({ keywords: "maria" }, undefined, 30))
    expect(page.items.length).toBe(30)
    for (const r of page.items) expect(r.name.split(" ")[0]).toBe("Maria")
  })

  it("finds people by title word, including anonymous members", () => {
    const items = peoplePages({ keywords: "engineer" }).flatMap((p) => p.items)
    for (const r of items) expect(r.position.toLowerCase()).toMatch(/engineer/)
    expect(items.some((r) => r.is_anonymous)).toBe(true)
  })

  it("ranks name matches above title matches and needs every term", () => {
    const page = ok(w.searchPeople({ keywords: "james engineer" }, undefined, 30))
    for (const r of page.items) {
      expect(r.name.startsWith("James ") || r.name.endsWith(" James")).toBe(true)
      expect(r.position.toLowerCase()).toMatch(/engineer/)
    }
  })

  it("applies exact name, title, school and company filters", () => {
    const named = ok(w.searchPeople({ first_name: "Priya", last_name: "Patel" }, undefined, 30)).items
    for (const r of named) expect(r.name).toBe("Priya Patel")
    const titled = ok(w.searchPeople({ keywords: "senior", title: "data scientist" }, undefined, 30)).items
    expect(titled.length).toBeGreaterThan(0)
    for (const r of titled) expect(r.position).toMatch(/^Senior Data Scientist at /)
    const schooled = ok(w.searchPeople({ keywords: "manager", school: "Stanford" }, undefined, 10)).items
    for (const r of schooled.filter((x) => !x.is_anonymous)) {
      expect(w.getPerson({ slug: r.public_identifier! })!.education[0]!.school).toBe("Stanford University")
    }
    const someone = ok(w.searchPeople({ keywords: "consultant" }, undefined, 30)).items.find(
      (r) => !r.is_anonymous
    )!
    const person = w.getPerson({ slug: someone.public_identifier! })!
    const company = w.getCompany({ slug: person.current_position!.company_slug! })!
    for (const filter of [company.slug, company.numeric_id, company.urn, company.name, company.url]) {
      const staff = ok(
        w.searchPeople({ keywords: "consultant", current_company: filter }, undefined, 30)
      ).items
      expect(staff.map((r) => r.urn)).toContain(person.urn)
      for (const r of staff.filter((x) => !x.is_anonymous)) {
        expect(w.getPerson({ slug: r.public_identifier! })!.current_position!.company_name).toContain(
          company.name
        )
      }
    }
    const past = person.experience[1]!
    const alumni = ok(
      w.searchPeople({ keywords: person.first_name, past_company: past.company_slug! }, undefined, 30)
    )
    expect(alumni.items.map((r) => r.urn)).toContain(person.urn)
  })

  it("pages without duplicates, keeps total_matches and stops at the depth cap", () => {
    const pages = peoplePages({ keywords: "engineer" })
    const items = pages.flatMap((p) => p.items)
    expect(items.length).toBe(LIMITS.peopleSearchCap)
    expect(new Set(items.map((r) => r.urn)).size).toBe(items.length)
    expect(pages.at(-1)!.next_cursor).toBeNull()
    for (const p of pages) expect(p.total_matches).toBe(pages[0]!.total_matches)
    expect(pages[0]!.total_matches!).toBeGreaterThan(LIMITS.peopleSearchCap)
  })

  it("lets later pages use another limit and rejects foreign cursors", () => {
    const first = ok(w.searchPeople({ keywords: "recruiter" }, undefined, 10))
    const second = ok(w.searchPeople({ keywords: "recruiter" }, first.next_cursor!, 30))
    expect(second.items[0]).toEqual(ok(w.searchPeople({ keywords: "recruiter" }, undefined, 11)).items[10])
    expect(w.searchPeople({ keywords: "designer" }, first.next_cursor!, 10)).toBe(InvalidCursor)
    expect(w.searchPeople({ keywords: "recruiter" }, "not-a-cursor", 10)).toBe(InvalidCursor)
    expect(w.searchPeople({ keywords: "recruiter" }, first.next_cursor!.slice(0, -2), 10)).toBe(InvalidCursor)
  })

  it("returns an empty page when nothing matches", () => {
    expect(w.searchPeople({ keywords: "xyzzy" }, undefined, 10)).toEqual({
      items: [],
      next_cursor: null,
      total_matches: 0
    })
    expect(w.searchPeople({}, undefined, 10)).toEqual({ items: [], next_cursor: null, total_matches: 0 })
  })
})

const forumPages = (q: ForumSearchQuery): Array<ForumSearchItem> =>
  drain((c) => w.forumSearch(q, c)).flatMap((p) => p.items)

describe("forum search", () => {
  it("finds posts whose titles have every term, paging to the cap without duplicates", () => {
    const items = forumPages({ query: "python" })
    expect(items.length).toBe(LIMITS.forumSearchCap)
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length)
    for (const i of items) {
      if (i.kind !== "post") throw new Error("not a post")
      expect(words(i.title)).toContain("python")
    }
    for (const i of forumPages({ query: "rust compiler" })) {
      if (i.kind !== "post") throw new Error("not a post")
      expect(words(i.title)).toEqual(expect.arrayContaining(["rust", "compiler"]))
    }
  })

  it("honours sort and range", () => {
    const fresh = forumPages({ query: "cooking", sort: "new", range: "past_month" })
    const times = fresh.map((i) => i.created_at)
    expect([...times].sort().reverse()).toEqual(times)
    for (const t of times) expect(Date.parse(t)).toBeGreaterThan(Date.UTC(2026, 9, 1) - 86_400_000)
    const top = forumPages({ query: "investing", sort: "top" })
    const votes = top.map((i) => (i.kind === "post" ? i.upvotes : 0))
    expect([...votes].sort((a, b) => b - a)).toEqual(votes)
  })

  it("finds comments, communities and users", () => {
    for (const c of forumPages({ query: "coffee", type: "comments" })) {
      if (c.kind !== "comment") throw new Error("not a comment")
      expect(words(c.text)).toContain("coffee")
    }
    const communities = forumPages({ query: "python", type: "communities" })
    expect(communities[0]).toMatchObject({ kind: "community", name: "python" })
    for (const c of communities) {
      if (c.kind !== "community") throw new Error("not a community")
      expect(w.getCommunity(c.name, false)!.topics).toContain("python")
    }
    const users = forumPages({ query: "otter", type: "users" })
    expect(users.length).toBeGreaterThan(0)
    for (const u of users) expect(u.kind === "user" && u.username.toLowerCase()).toContain("otter")
  })

  it("answers unknown words with an empty page and foreign cursors with InvalidCursor", () => {
    expect(w.forumSearch({ query: "xyzzy plugh" }, undefined)).toEqual({ items: [], next_cursor: null })
    const page = ok(w.forumSearch({ query: "python" }, undefined))
    expect(w.forumSearch({ query: "python", sort: "new" }, page.next_cursor!)).toBe(InvalidCursor)
  })
})

describe("community feeds and threads", () => {
  it("pages a community feed newest first", () => {
    const pages = drain((c) => w.getCommunityPosts("python", "new", "all_time", c))
    const items = pages.flatMap((p) => p.items)
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length)
    const times = items.map((i) => i.created_at)
    expect([...times].sort().reverse()).toEqual(times)
    for (const i of items) expect(i.community).toBe("python")
  })

  it("orders a thread so that replies follow their parents", () => {
    const post = forumPages({ query: "python", sort: "comment_count" })[0]!
    const thread = w.getThread(post.id, 200, "top")!
    expect(thread.comments.length).toBe(Math.min(200, thread.post.comment_count))
    const depth = new Map<string, number>()
    for (const c of thread.comments) {
      expect(c.post_id).toBe(thread.post.id)
      if (c.parent_id === null) expect(c.depth).toBe(0)
      else expect(c.depth).toBe(depth.get(c.parent_id)! + 1)
      expect(c.created_at > thread.post.created_at).toBe(true)
      depth.set(c.id, c.depth)
    }
  })
})

describe("microblog search and timelines", () => {
  const tweetPages = (query: string, sort: "latest" | "top"): Array<Tweet> =>
    drain((c) => w.microblogSearch({ query, sort }, c)).flatMap((p) => p.items)

  it("finds tweets with every term, newest first, without duplicates", () => {
    const items = tweetPages("rust", "latest")
    expect(items.length).toBeGreaterThan(20)
    expect(new Set(items.map((t) => t.id)).size).toBe(items.length)
    for (const t of items) expect(words(t.text)).toContain("rust")
    const times = items.map((t) => t.created_at)
    expect([...times].sort().reverse()).toEqual(times)
    const top = tweetPages("rust", "top").map((t) => t.likes)
    expect([...top].sort((a, b) => b - a)).toEqual(top)
  })

  it("pages a timeline, optionally without replies", () => {
    const handle = tweetPages("gaming", "latest")[0]!.author.handle
    const all = drain((c) => w.getTweets(handle, true, c)).flatMap((p) => p.items)
    const noReplies = drain((c) => w.getTweets(handle, false, c)).flatMap((p) => p.items)
    expect(noReplies).toEqual(all.filter((t) => !t.is_reply))
    expect(new Set(all.map((t) => t.id)).size).toBe(all.length)
    expect(all.length).toBeGreaterThan(0)
    expect(all.length).toBeLessThanOrEqual(Math.min(1000, w.getMicroblogProfile({ handle })!.tweet_count))
    const profile = w.getMicroblogProfile({ handle })!
    expect(w.getTweets(profile.id, true, undefined)).toEqual(w.getTweets(handle, true, undefined))
  })
})
