import { describe, expect, it } from "vitest"
import type { Page } from "../../src/upstream/contract.ts"
import { InvalidCursor, makeWorld } from "../../src/upstream/world/index.ts"

const w = makeWorld("urls")

const ok = <A>(p: Page<A> | InvalidCursor | undefined): Page<A> => {
  if (p === undefined || p === InvalidCursor) throw new Error(`expected a page, got ${String(p)}`)
  return p
}

/** Variants a caller may paste: other subdomains, tracking parameters, trailing slashes. */
const variants = (url: string): Array<string> => {
  const u = new URL(url)
  const path = u.pathname.replace(/\/$/, "")
  return [
    url,
    `https://www.${u.host}${path}/?utm_source=x&trk=y`,
    `http://m.${u.host}${path}`,
    `${u.host}${path}#top`
  ]
}

describe("every URL the world emits resolves to the same entity", () => {
  it("profnet profiles, companies and posts", () => {
    const results = ok(w.searchPeople({ keywords: "manager" }, undefined, 30)).items.filter(
      (r) => !r.is_anonymous
    )
    for (const r of results.slice(0, 8)) {
      const person = w.getPerson({ slug: r.public_identifier! })!
      for (const url of variants(person.profile_url)) {
        expect(w.resolveProfnetUrl(url)).toEqual({
          type: "person",
          id: person.urn,
          handle: person.public_identifier,
          canonical_url: person.profile_url
        })
      }
      const company = w.getCompany({ slug: person.current_position!.company_slug! })!
      const resolved = w.resolveProfnetUrl(company.url)!
      expect(resolved).toEqual({
        type: "company",
        id: company.urn,
        handle: company.slug,
        canonical_url: company.url
      })
      expect(w.getCompany({ slug: resolved.handle })).toEqual(company)
      const posts = [
        ...ok(w.getPersonPosts(person.public_identifier, undefined)).items,
        ...ok(w.getCompanyPosts(company.slug, undefined)).items
      ]
      for (const post of posts) {
        for (const url of variants(post.url)) {
          expect(w.resolveProfnetUrl(url)).toEqual({
            type: "post",
            id: post.urn,
            handle: post.author.identifier,
            canonical_url: post.url
          })
        }
        expect(w.getProfnetPost(post.urn)).toEqual(post)
        const feed = `https://profnet.com/feed/update/${post.urn}/`
        expect(w.resolveProfnetUrl(feed)?.id).toBe(post.urn)
        expect(
          w.resolveProfnetUrl(
            post.author.type === "person"
              ? `https://profnet.com/in/${post.author.identifier}`
              : `https://profnet.com/company/${post.author.identifier}`
          )?.id
        ).toBe(post.author.urn)
      }
    }
  })

  it("forum posts, comments, communities and users", () => {
    for (const query of ["python", "sourdough", "chess"]) {
      const posts = ok(w.forumSearch({ query }, undefined)).items
      for (const s of posts) {
        if (s.kind !== "post") throw new Error("post search returned a non-post")
        for (const url of variants(s.permalink)) {
          expect(w.resolveForumUrl(url)).toEqual({
            type: "post",
            id: s.id,
            community: s.community,
            post_id: null,
            username: null,
            canonical_url: s.permalink
          })
        }
        const [full] = w.getForumPosts([s.permalink])
        expect(full).toMatchObject({ id: s.id, title: s.title, permalink: s.permalink, url: s.permalink })
        const community = w.getCommunity(s.community, false)!
        expect(w.resolveForumUrl(community.url)).toMatchObject({
          type: "community",
          id: community.id,
          community: community.name
        })
        const user = w.getForumUser(s.author, [])!
        expect(w.resolveForumUrl(user.profile_url)).toMatchObject({
          type: "user",
          id: user.id,
          username: user.username
        })
      }
      const thread = w.getThread(posts[0]!.id, 30, "new")!
      for (const c of thread.comments) {
        expect(w.resolveForumUrl(c.permalink)).toEqual({
          type: "comment",
          id: c.id,
          community: thread.post.community,
          post_id: thread.post.id,
          username: null,
          canonical_url: c.permalink
        })
        expect(w.getForumUser(c.author, [])?.username).toBe(c.author)
      }
      for (const c of ok(w.forumSearch({ query, type: "comments" }, undefined)).items) {
        if (c.kind !== "comment") throw new Error("comment search returned a non-comment")
        expect(w.resolveForumUrl(c.permalink)).toMatchObject({
          type: "comment",
          id: c.id,
          post_id: c.post_id
        })
      }
    }
  })

  it("user pages list posts and comments whose links resolve", () => {
    const author = ok(w.forumSearch({ query: "python", sort: "top" }, undefined)).items[0]!
    if (author.kind !== "post") throw new Error("expected a post")
    const user = w.getForumUser(author.author, ["posts", "comments"])!
    expect(user.posts!.map((p) => p.id)).toContain(author.id)
    for (const p of user.posts!) expect(w.resolveForumUrl(p.permalink)?.id).toBe(p.id)
    for (const c of user.comments!) {
      expect(c.author).toBe(user.username)
      expect(w.resolveForumUrl(c.permalink)?.id).toBe(c.id)
    }
  })

  it("microblog profiles and tweets", () => {
    for (const t of ok(w.microblogSearch({ query: "running" }, undefined)).items) {
      for (const url of variants(t.url)) {
        expect(w.resolveMicroblogUrl(url)).toEqual({
          type: "tweet",
          id: t.id,
          handle: t.author.handle,
          canonical_url: t.url
        })
      }
      expect(w.getTweet(t.id)).toEqual(t)
      const profile = w.getMicroblogProfile({ handle: t.author.handle })!
      expect(w.getMicroblogProfile({ id: t.author.id })).toEqual(profile)
      expect(w.resolveMicroblogUrl(profile.url)).toEqual({
        type: "profile",
        id: profile.id,
        handle: profile.handle,
        canonical_url: profile.url
      })
      for (const mention of t.text.matchAll(/@([A-Za-z0-9_]+)/g)) {
        expect(w.getMicroblogProfile({ handle: mention[1]! })?.handle).toBe(mention[1])
      }
    }
  })
})
