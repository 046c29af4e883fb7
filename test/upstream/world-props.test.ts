import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { companyCore } from "../../src/upstream/world/companies.ts"
import { makeCtx } from "../../src/upstream/world/context.ts"
import { communityCore, forumUserCore } from "../../src/upstream/world/forum-core.ts"
import { postCheap, postSummary } from "../../src/upstream/world/forum-posts.ts"
import { makeWorld } from "../../src/upstream/world/index.ts"
import { accountCore, tweet } from "../../src/upstream/world/microblog.ts"
import { personCore } from "../../src/upstream/world/people.ts"
import { profnetPost } from "../../src/upstream/world/profnet-posts.ts"
import { SIZES, TOPICS } from "../../src/upstream/world/sizes.ts"

const SEED = "props"
const ctx = makeCtx(SEED)
const w = makeWorld(SEED)

const index = (n: number) => fc.integer({ min: 0, max: n - 1 })

/** Any entity index, turned into its public identifiers, comes back through the lookups. */
describe("index -> identifier -> lookup round trips", () => {
  it("people", () => {
    fc.assert(
      fc.property(index(SIZES.people), (i) => {
        const p = personCore(ctx, i)
        const bySlug = w.getPerson({ slug: p.slug })
        if (p.anonymous) {
          expect(bySlug).toBeUndefined()
          expect(w.getPerson({ urn: p.urn })).toBeUndefined()
        } else {
          expect(bySlug?.urn).toBe(p.urn)
          expect(w.getPerson({ urn: p.urn })).toEqual(bySlug)
          expect(w.getCompany({ slug: bySlug!.current_position!.company_slug! })).toBeDefined()
        }
      })
    )
  })

  it("companies and their posts", () => {
    fc.assert(
      fc.property(index(SIZES.companies), fc.nat(), (c, k) => {
        const core = companyCore(ctx, c)
        expect(w.getCompany({ slug: core.slug })?.urn).toBe(core.urn)
        expect(w.getCompany({ domain: core.domain })?.slug).toBe(core.slug)
        expect(w.companyByNumericId(core.numericId)?.slug).toBe(core.slug)
        const post = profnetPost(ctx, 1, c, k % core.postCount)!
        expect(w.getProfnetPost(post.urn)).toEqual(post)
        expect(w.resolveProfnetUrl(post.url)?.id).toBe(post.urn)
      })
    )
  })

  it("forum communities, posts and users", () => {
    fc.assert(
      fc.property(index(SIZES.communities), fc.nat(), index(SIZES.forumUsers), (c, j, u) => {
        const core = communityCore(ctx, c)
        expect(w.getCommunity(core.name, false)?.id).toBe(core.id)
        expect(w.getCommunity(core.name.toUpperCase(), false)?.name).toBe(core.name)
        const s = postSummary(ctx, postCheap(ctx, core, j % core.postCount), core)
        expect(w.getForumPosts([s.id])[0]).toMatchObject({ id: s.id, title: s.title, author: s.author })
        const user = forumUserCore(ctx, u)
        expect(w.getForumUser(user.username, [])?.id).toBe(user.id)
        expect(w.getForumUser(user.username.toLowerCase(), [])?.username).toBe(user.username)
      })
    )
  })

  it("every topic has its flagship community", () => {
    for (const t of TOPICS) expect(w.getCommunity(t, false)?.name).toBe(t)
  })

  it("microblog accounts and tweets", () => {
    fc.assert(
      fc.property(index(SIZES.microblogAccounts), fc.nat(), (a, k) => {
        const core = accountCore(ctx, a)
        expect(w.getMicroblogProfile({ handle: core.handle })?.id).toBe(core.id)
        expect(w.getMicroblogProfile({ handle: `@${core.handle.toLowerCase()}` })?.id).toBe(core.id)
        expect(w.getMicroblogProfile({ id: core.id })?.handle).toBe(core.handle)
        const t = tweet(ctx, core, k % core.timeline)
        expect(w.getTweet(t.id)).toEqual(t)
      })
    )
  })

  it("arbitrary strings never resolve to something with another identifier", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (s) => {
        const person = w.getPerson({ slug: s })
        if (person !== undefined) expect(person.public_identifier).toBe(s.toLowerCase())
        const company = w.getCompany({ slug: s })
        if (company !== undefined) expect(company.slug).toBe(s.toLowerCase())
        expect(w.getTweet(s)?.id ?? s).toBe(s)
        expect(w.getForumPosts([s])[0]?.id ?? s.toLowerCase()).toBe(s.toLowerCase())
      })
    )
  })
})
