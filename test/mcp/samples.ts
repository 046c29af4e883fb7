import type { ForumPostSummary, PeopleSearchResult, Tweet } from "../../src/contract/records.ts"
import type { Page } from "../../src/upstream/contract.ts"
import { makeWorld } from "../../src/upstream/world/index.ts"
import { testSeed } from "../support/app.ts"

const world = makeWorld(testSeed)

const page = <A>(p: Page<A> | "invalid_cursor" | undefined): Page<A> => {
  if (p === undefined || p === "invalid_cursor") throw new Error(`expected a page, got ${String(p)}`)
  return p
}

const hit = page<PeopleSearchResult>(world.searchPeople({ keywords: "engineer" }, undefined, 30)).items.find(
  (item) => !item.is_anonymous && item.public_identifier !== null
)!
export const person = world.getPerson({ slug: hit.public_identifier! })!
const companySlug = person.current_position!.company_slug!
const forumPost = page(world.forumSearch({ query: "python" }, undefined)).items[0] as ForumPostSummary
const tweet: Tweet = page(world.microblogSearch({ query: "python" }, undefined)).items[0]!

/** Valid arguments for every operation of the registry, from the simulated world of the test server. */
export const sampleArguments: Record<string, Record<string, unknown>> = {
  resolveUrl: { url: person.profile_url },
  getProfile: { identifier: person.public_identifier, sections: ["about", "experience"] },
  searchPeople: { keywords: "engineer", limit: 5 },
  getCompany: { identifier: companySlug },
  getPosts: { identifier: person.public_identifier },
  forumSearch: { query: "python", type: "posts", sort: "top" },
  getCommunity: { community_name: "python", include_settings: true },
  getCommunityPosts: { community_name: "python", sort: "top", range: "past_year" },
  getForumUser: { username: forumPost.author, sections: ["posts"] },
  getForumPosts: { ids: [forumPost.id], thread: true, comment_limit: 5 },
  resolveForumUrl: { url: forumPost.permalink },
  microblogSearch: { query: "python", sort: "latest" },
  getMicroblogProfile: { identifier: tweet.author.handle },
  getTweets: { identifier: tweet.author.handle, include_replies: true },
  getTweet: { id: tweet.id },
  resolveMicroblogUrl: { url: tweet.url },
  getTweetReplies: { id: tweet.url, sort: "latest" }
}
