import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { makeWorld } from "../../src/upstream/world/index.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp, testSeed } from "../support/app.ts"
import { assertInvalid } from "../support/assertions.ts"
import { storeName } from "../support/database.ts"

const world = makeWorld(testSeed)
const freshIp = ipSequence("10.30")

const someone = (() => {
  const page = world.searchPeople({ keywords: "engineer" }, undefined, 30)
  if (page === "invalid_cursor") throw new Error("unexpected")
  const hit = page.items.find((item) => !item.is_anonymous && item.public_identifier !== null)!
  return world.getPerson({ slug: hit.public_identifier! })!
})()
const company = world.getCompany({ slug: someone.current_position!.company_slug! })!
/** A company with more than one page of posts. */
const busy = (() => {
  for (const keywords of ["engineer", "manager", "sales", "designer", "analyst"]) {
    const page = world.searchPeople({ keywords }, undefined, 30)
    if (page === "invalid_cursor") continue
    for (const item of page.items) {
      const slug =
        item.public_identifier === null
          ? undefined
          : world.getPerson({ slug: item.public_identifier })?.current_position?.company_slug
      const posts = slug === null || slug === undefined ? undefined : world.getCompanyPosts(slug, undefined)
      if (posts !== undefined && posts !== "invalid_cursor" && posts.next_cursor !== null)
        return world.getCompany({ slug: slug! })!
    }
  }
  throw new Error("no company with two pages of posts")
})()
const anonymous = (() => {
  for (const keywords of ["engineer", "manager", "director", "analyst"]) {
    let cursor: string | undefined
    for (let pageNo = 0; pageNo < 10; pageNo++) {
      const page = world.searchPeople({ keywords }, cursor, 30)
      if (page === "invalid_cursor") break
      const hit = page.items.find((item) => item.is_anonymous)
      if (hit !== undefined) return hit
      if (page.next_cursor === null) break
      cursor = page.next_cursor
    }
  }
  throw new Error("no anonymous result in the world")
})()

const trial = (ip = freshIp()) =>
  Effect.map(
    Effect.flatMap(TestApp, (app) => app.mint(ip)),
    (m) => ({ ...m, ip })
  )

describe(`profnet operations (${storeName})`, () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("resolveUrl: person, company and post URLs, tracking and hosts tolerated; others refused", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, ip } = yield* trial()
        const person = yield* app.call(
          `/v1/profnet/resolve-url?url=${encodeURIComponent(`http://m.profnet.com/in/${someone.public_identifier}/?utm_source=x&trk=y`)}`,
          { key, ip }
        )
        assert.strictEqual(person.status, 200)
        assert.strictEqual(person.body.kind, "url_resolution")
        assert.deepStrictEqual(person.body.data, {
          type: "person",
          id: someone.urn,
          handle: someone.public_identifier,
          canonical_url: `https://profnet.com/in/${someone.public_identifier}`
        })
        assert.strictEqual(person.body.cost.charged, 2)
        const org = yield* app.call(
          `/v1/profnet/resolve-url?url=${encodeURIComponent(`www.profnet.com/company/${company.slug}`)}`,
          { key, ip }
        )
        assert.strictEqual(org.body.data.id, company.urn)
        assert.strictEqual(org.body.data.handle, company.slug)
        const post = yield* app.call(
          `/v1/profnet/resolve-url?url=${encodeURIComponent("https://www.profnet.com/posts/jane-doe_great-news-activity-7234567890123456789-AbCd/?utm_medium=ios")}`,
          { key, ip }
        )
        assert.deepStrictEqual(post.body.data.id, "urn:li:activity:7234567890123456789")
        assert.strictEqual(post.body.data.type, "post")
        const other = yield* app.call(
          `/v1/profnet/resolve-url?url=${encodeURIComponent("https://example.com/in/x")}`,
          { key, ip }
        )
        assert.strictEqual(other.status, 400)
        assert.strictEqual(other.body.param, "url")
        const extra = yield* app.call("/v1/profnet/resolve-url?url=x&freshness=realtime", { key, ip })
        assert.strictEqual(extra.status, 400)
      })
    )

    it.effect("getProfile: overview plus the requested sections, priced beyond 2 sections", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, ip } = yield* trial()
        const plain = yield* app.call(`/v1/profnet/profiles?identifier=${someone.public_identifier}`, {
          key,
          ip
        })
        assert.strictEqual(plain.status, 200)
        assert.strictEqual(plain.body.kind, "person")
        assert.strictEqual(plain.body.data.name, someone.name)
        for (const field of ["headline", "location", "current_position", "follower_count"])
          assert.property(plain.body.data, field)
        assert.notProperty(plain.body.data, "experience")
        assert.strictEqual(plain.body.cost.quoted, 4)
        const three = yield* app.call(
          `/v1/profnet/profiles?identifier=${encodeURIComponent(someone.profile_url)}&sections=skills,about,experience`,
          { key, ip }
        )
        assert.strictEqual(three.body.cost.quoted, 6)
        assert.deepStrictEqual(three.body.data.skills, someone.skills)
        assert.deepStrictEqual(three.body.data.experience, someone.experience)
        assert.notProperty(three.body.data, "education")
        const byUrn = yield* app.call(
          `/v1/profnet/profiles?identifier=${someone.urn}&sections=about,education,experience,skills`,
          { key, ip }
        )
        assert.strictEqual(byUrn.body.cost.quoted, 8)
        const badSection = yield* app.call(
          `/v1/profnet/profiles?identifier=${someone.public_identifier}&sections=about,hobbies`,
          { key, ip }
        )
        assert.strictEqual(badSection.body.param, "sections")
        const company_ = yield* app.call(
          `/v1/profnet/profiles?identifier=${encodeURIComponent(company.url)}`,
          { key, ip }
        )
        assert.strictEqual(company_.body.param, "identifier")
        assert.include(company_.body.message, "getCompany")
        const before = (yield* app.call("/v1/usage", { key, ip })).body.free_tier.used_today
        const missing = yield* app.call(`/v1/profnet/profiles?identifier=${anonymous.urn}`, { key, ip })
        assert.strictEqual(missing.status, 404)
        assert.strictEqual((yield* app.call("/v1/usage", { key, ip })).body.free_tier.used_today, before)
      })
    )

    it.effect(
      "getProfile: a repeated section or more than 4 is INVALID_INPUT on sections, nothing charged",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const { key, ip } = yield* trial()
          const profile = (sections: string) =>
            app.call(`/v1/profnet/profiles?identifier=${someone.public_identifier}&sections=${sections}`, {
              key,
              ip
            })
          const twice = yield* profile("about,experience,about")
          assertInvalid(twice, "sections", /"about" is listed more than once/)
          assert.include(twice.body.message, "about, experience, education, skills at most once")
          assertInvalid(yield* profile("skills,skills"), "sections", /"skills"/)
          assertInvalid(yield* profile("about,,about"), "sections", /more than once/)
          assertInvalid(
            yield* profile("about,experience,education,skills,about"),
            "sections",
            /At most 4 sections \(got 5\)/
          )
          assert.strictEqual((yield* app.call("/v1/usage", { key, ip })).body.free_tier.used_today, 0)
          const reordered = yield* profile("skills,about,education,experience")
          assert.strictEqual(reordered.status, 200)
          assert.strictEqual(reordered.body.cost.quoted, 8)
        })
    )

    it.effect("searchPeople: ranked results, the search rules, trial cap and fewer_results refund", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, ip } = yield* trial()
        const search = yield* app.call(
          `/v1/profnet/search?first_name=${someone.first_name}&last_name=${someone.last_name}`,
          { key, ip }
        )
        assert.strictEqual(search.status, 200)
        assert.strictEqual(search.body.kind, "people_search")
        assert.isTrue(search.body.data.results.some((r: { urn: string }) => r.urn === someone.urn))
        for (const r of search.body.data.results) {
          for (const field of ["name", "position", "location", "urn", "public_identifier", "is_anonymous"])
            assert.property(r, field)
        }
        assert.isNumber(search.body.data.total_matches)
        const noKeywords = yield* app.call("/v1/profnet/search?school=MIT", { key, ip })
        assert.strictEqual(noKeywords.body.param, "keywords")
        const nothing = yield* app.call("/v1/profnet/search", { key, ip })
        assert.strictEqual(nothing.body.param, "keywords")
        const overLimit = yield* app.call("/v1/profnet/search?keywords=engineer&limit=31", { key, ip })
        assert.strictEqual(overLimit.body.param, "limit")
        assert.strictEqual(overLimit.body.code, "INVALID_INPUT")
        const trialCap = yield* app.call("/v1/profnet/search?keywords=engineer&limit=20", { key, ip })
        assert.strictEqual(trialCap.body.code, "TRIAL_CAP_EXCEEDED")
        const rare = yield* app.call(
          `/v1/profnet/search?first_name=${someone.first_name}&last_name=${someone.last_name}&title=zzzqqq`,
          { key, ip }
        )
        assert.strictEqual(rare.status, 200)
        assert.strictEqual(rare.body.data.results.length, 0)
        assert.strictEqual(rare.body.cost.charged, 10)
      })
    )

    it.effect("searchPeople on a paid key: limit 30 rules, cursor paging, settlement by results", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const { key, ip, account_id } = yield* trial()
        yield* Effect.orDie(admin.setPlan(account_id, "flex"))
        yield* Effect.orDie(admin.credit(account_id, 500, "balance", "test"))
        const headers = () => ({ key, ip, idempotencyKey: crypto.randomUUID() })
        const pastName = yield* app.call(
          `/v1/profnet/search?keywords=engineer&past_company=${encodeURIComponent(company.name)}&limit=30`,
          headers()
        )
        assert.strictEqual(pastName.body.param, "limit")
        const companyUrl = yield* app.call(
          `/v1/profnet/search?keywords=engineer&current_company=${encodeURIComponent(company.url)}&limit=30`,
          headers()
        )
        assert.strictEqual(companyUrl.body.param, "limit")
        const byId = yield* app.call(
          `/v1/profnet/search?keywords=engineer&past_company=${company.numeric_id}&limit=30`,
          headers()
        )
        assert.strictEqual(byId.status, 200)
        const currentName = yield* app.call(
          `/v1/profnet/search?keywords=engineer&current_company=${encodeURIComponent(company.name)}&limit=30`,
          headers()
        )
        assert.strictEqual(currentName.status, 200)
        const first = yield* app.call("/v1/profnet/search?keywords=engineer&limit=25", headers())
        assert.strictEqual(first.body.cost.quoted, 12)
        assert.strictEqual(first.body.data.results.length, 25)
        assert.strictEqual(first.body.cost.charged, 12)
        const second = yield* app.call(
          `/v1/profnet/search?keywords=engineer&limit=25&cursor=${first.body.data.cursor}`,
          headers()
        )
        assert.strictEqual(second.status, 200)
        const firstUrns = new Set(first.body.data.results.map((r: { urn: string }) => r.urn))
        assert.isFalse(second.body.data.results.some((r: { urn: string }) => firstUrns.has(r.urn)))
        const forged = yield* app.call("/v1/profnet/search?keywords=engineer&cursor=bm9wZQ", headers())
        assert.strictEqual(forged.body.param, "cursor")
      })
    )

    it.effect(
      "getCompany: by slug, URL and domain (+4, refunded once known); ids refused; closest matches",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const { key, ip } = yield* trial()
          const bySlug = yield* app.call(`/v1/profnet/companies?identifier=${company.slug}`, { key, ip })
          assert.strictEqual(bySlug.status, 200)
          assert.strictEqual(bySlug.body.kind, "company")
          for (const field of [
            "name",
            "description",
            "industry",
            "employee_count",
            "headquarters",
            "website",
            "founded_year",
            "specialities",
            "urn",
            "numeric_id"
          ]) {
            assert.property(bySlug.body.data, field)
          }
          assert.strictEqual(bySlug.body.cost.quoted, 4)
          const byUrl = yield* app.call(
            `/v1/profnet/companies?identifier=${encodeURIComponent(`${company.url}/?trk=abc`)}`,
            { key, ip }
          )
          assert.strictEqual(byUrl.body.data.slug, company.slug)
          const tight = yield* app.call(`/v1/profnet/companies?identifier=${company.domain}&max_credits=4`, {
            key,
            ip
          })
          assert.strictEqual(tight.body.code, "QUOTE_EXCEEDS_MAX_CREDITS")
          const firstDomain = yield* app.call(
            `/v1/profnet/companies?identifier=https://www.${company.domain}/about`,
            { key, ip }
          )
          assert.deepStrictEqual(firstDomain.body.cost, { quoted: 8, charged: 8, refunded: 0 })
          const again = yield* app.call(`/v1/profnet/companies?identifier=${company.domain}`, { key, ip })
          assert.deepStrictEqual(again.body.cost, { quoted: 8, charged: 4, refunded: 4 })
          assert.deepStrictEqual(again.body.receipt.refunds, [
            { reason: "domain_resolved_before", credits: 4 }
          ])
          for (const id of [company.numeric_id, company.urn]) {
            const refused = yield* app.call(`/v1/profnet/companies?identifier=${id}`, { key, ip })
            assert.strictEqual(refused.body.param, "identifier")
            assert.include(refused.body.message, "slug")
          }
          const typo = yield* app.call(
            `/v1/profnet/companies?identifier=${company.domain.replace(".", "x.")}`,
            { key, ip }
          )
          assert.strictEqual(typo.status, 400)
          assert.include(typo.body.closest_matches, company.domain)
        })
    )

    it.effect("getPosts: person and company pages with cursors; slugs detected; domain pricing", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const { key, ip, account_id } = yield* trial()
        const personPosts = yield* app.call(`/v1/profnet/posts?identifier=${someone.public_identifier}`, {
          key,
          ip
        })
        assert.strictEqual(personPosts.status, 200)
        assert.strictEqual(personPosts.body.kind, "posts")
        for (const post of personPosts.body.data.posts) {
          for (const field of [
            "text",
            "created_at",
            "author",
            "likes",
            "comments_count",
            "shares",
            "is_repost",
            "url"
          ])
            assert.property(post, field)
          assert.strictEqual(post.author.identifier, someone.public_identifier)
        }
        const companyPosts = yield* app.call(`/v1/profnet/posts?identifier=${busy.slug}`, { key, ip })
        assert.strictEqual(companyPosts.status, 200)
        assert.isAbove(companyPosts.body.data.posts.length, 0)
        assert.strictEqual(companyPosts.body.data.posts[0].author.type, "company")
        const byDomain = yield* app.call(`/v1/profnet/posts?identifier=${company.domain}`, { key, ip })
        assert.strictEqual(byDomain.body.cost.quoted, 8)
        const cursor = companyPosts.body.data.cursor
        assert.isString(cursor)
        const trialPage = yield* app.call(`/v1/profnet/posts?identifier=${busy.slug}&cursor=${cursor}`, {
          key,
          ip
        })
        assert.strictEqual(trialPage.body.code, "TRIAL_CAP_EXCEEDED")
        yield* Effect.orDie(admin.setPlan(account_id, "production"))
        yield* Effect.orDie(admin.credit(account_id, 100, "balance", "test"))
        const older = yield* app.call(`/v1/profnet/posts?identifier=${busy.slug}&cursor=${cursor}`, {
          key,
          ip,
          idempotencyKey: crypto.randomUUID()
        })
        assert.strictEqual(older.status, 200)
        assert.isTrue(older.body.data.posts[0].created_at <= companyPosts.body.data.posts.at(-1).created_at)
        const refused = yield* app.call(`/v1/profnet/posts?identifier=${company.urn}`, {
          key,
          ip,
          idempotencyKey: crypto.randomUUID()
        })
        assert.strictEqual(refused.body.param, "identifier")
      })
    )
  })
})
