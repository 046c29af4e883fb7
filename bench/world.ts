import type { Page } from "../src/upstream/contract.ts"
import { InvalidCursor, makeWorld } from "../src/upstream/world/index.ts"

/** The seed `src/main.ts` serves. */
export const serviceSeed = "svc-world-1"

/** Real identifiers of the simulated world, so every request the bench sends can succeed. */
export interface Sample {
  readonly people: ReadonlyArray<{ readonly slug: string; readonly urn: string; readonly url: string }>
  readonly companies: ReadonlyArray<{ readonly slug: string; readonly domain: string; readonly url: string }>
  readonly profnetPostUrls: ReadonlyArray<string>
  readonly forumPosts: ReadonlyArray<{
    readonly id: string
    readonly url: string
    readonly author: string
    readonly community: string
  }>
  readonly tweets: ReadonlyArray<{ readonly id: string; readonly url: string; readonly handle: string }>
  readonly keywords: ReadonlyArray<string>
}

const items = <A>(page: Page<A> | InvalidCursor | undefined): ReadonlyArray<A> =>
  page === undefined || page === InvalidCursor ? [] : page.items

export const sampleWorld = (seed: string = serviceSeed, size = 20): Sample => {
  const world = makeWorld(seed)
  const keywords = ["engineer", "manager", "designer", "analyst", "sales"]
  const found = keywords.flatMap((keywords) =>
    items(world.searchPeople({ keywords }, undefined, 30)).filter((hit) => !hit.is_anonymous)
  )
  const people = found.slice(0, size).flatMap((hit) => {
    const slug = hit.public_identifier
    const person = slug === null ? undefined : world.getPerson({ slug })
    return slug === null || person === undefined
      ? []
      : [
          {
            slug,
            urn: person.urn,
            url: person.profile_url,
            companySlug: person.current_position?.company_slug ?? null
          }
        ]
  })
  const companies = [...new Set(people.flatMap((p) => (p.companySlug === null ? [] : [p.companySlug])))]
    .flatMap((slug) => {
      const company = world.getCompany({ slug })
      return company === undefined ? [] : [{ slug: company.slug, domain: company.domain, url: company.url }]
    })
    .slice(0, size)
  const profnetPostUrls = people
    .flatMap((p) => items(world.getPersonPosts(p.slug, undefined)).slice(0, 1))
    .map((post) => post.url)
  const forumPosts = ["python", "linux", "music", "travel"]
    .flatMap((query) => items(world.forumSearch({ query }, undefined)))
    .flatMap((item) => (item.kind === "post" ? [item] : []))
    .slice(0, size)
    .map((post) => ({ id: post.id, url: post.permalink, author: post.author, community: post.community }))
  const tweets = ["rust", "football", "coffee"]
    .flatMap((query) => items(world.microblogSearch({ query }, undefined)))
    .slice(0, size)
    .map((tweet) => ({ id: tweet.id, url: tweet.url, handle: tweet.author.handle }))
  return { people, companies, profnetPostUrls, forumPosts, tweets, keywords }
}

const pick = <A>(list: ReadonlyArray<A>, i: number): A => {
  if (list.length === 0) throw new Error("the simulated world gave the bench no sample for this operation")
  return list[i % list.length]!
}

/** Valid query parameters for the i-th call of each operation, by operation id. */
export const builders: Readonly<Record<string, (sample: Sample, i: number) => Record<string, string>>> = {
  resolveUrl: (s, i) => ({
    url: [pick(s.people, i).url, pick(s.companies, i).url, pick(s.profnetPostUrls, i)][i % 3]!
  }),
  getProfile: (s, i) => ({
    identifier: i % 4 === 0 ? pick(s.people, i).urn : pick(s.people, i).slug,
    ...(i % 2 === 0 ? { sections: "about,experience" } : {})
  }),
  searchPeople: (s, i) => ({ keywords: pick(s.keywords, i), limit: String(i % 3 === 0 ? 20 : 10) }),
  getCompany: (s, i) => ({
    identifier: i % 5 === 0 ? pick(s.companies, i).domain : pick(s.companies, i).slug
  }),
  getPosts: (s, i) => ({ identifier: i % 2 === 0 ? pick(s.people, i).slug : pick(s.companies, i).slug }),
  forumSearch: (_s, i) => ({ query: pick(["python", "linux", "music", "travel"], i) }),
  getCommunity: (s, i) => ({
    community_name: pick(s.forumPosts, i).community,
    include_settings: String(i % 2 === 0)
  }),
  getCommunityPosts: (s, i) => ({ community_name: pick(s.forumPosts, i).community, sort: "new" }),
  getForumUser: (s, i) => ({
    username: pick(s.forumPosts, i).author,
    ...(i % 2 === 0 ? { sections: "posts" } : {})
  }),
  getForumPosts: (s, i) =>
    i % 3 === 0
      ? { ids: pick(s.forumPosts, i).id, thread: "true", comment_limit: "20" }
      : { ids: `${pick(s.forumPosts, i).id},${pick(s.forumPosts, i + 1).id}` },
  resolveForumUrl: (s, i) => ({ url: pick(s.forumPosts, i).url }),
  microblogSearch: (_s, i) => ({ query: pick(["rust", "football", "coffee"], i) }),
  getMicroblogProfile: (s, i) => ({ identifier: pick(s.tweets, i).handle }),
  getTweets: (s, i) => ({ identifier: pick(s.tweets, i).handle }),
  getTweet: (s, i) => ({ id: i % 2 === 0 ? pick(s.tweets, i).id : pick(s.tweets, i).url }),
  getTweetReplies: (s, i) => ({ id: pick(s.tweets, i).id, ...(i % 2 === 0 ? { sort: "latest" } : {}) }),
  resolveMicroblogUrl: (s, i) => ({ url: pick(s.tweets, i).url })
}

export const query = (params: Readonly<Record<string, string>>): string => {
  const text = new URLSearchParams(params).toString()
  return text.length === 0 ? "" : `?${text}`
}
