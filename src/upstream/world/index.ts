import type {
  CommentSort,
  Community,
  CommunitySort,
  Company,
  ForumPost,
  ForumPostSummary,
  ForumRange,
  ForumSearchItem,
  ForumThread,
  ForumUrlResolution,
  ForumUser,
  ForumUserSection,
  MicroblogProfile,
  MicroblogSort,
  MicroblogUrlResolution,
  PeopleSearchResult,
  Person,
  ProfnetPost,
  ProfnetUrlResolution,
  Tweet
} from "../../contract/records.ts"
import { defaultHosts, type Hosts } from "../../domain/identifiers/hosts.ts"
import type {
  CompanyRef,
  ForumSearchQuery,
  MicroblogProfileRef,
  MicroblogSearchQuery,
  Page,
  PeopleQuery,
  PersonRef
} from "../contract.ts"
import {
  closestDomains,
  company,
  companyIndexByDomain,
  companyIndexByNumericId,
  companyIndexBySlug,
  companyNames
} from "./companies.ts"
import { type Ctx, makeCtx } from "./context.ts"
import { InvalidCursor, page, scopeOf, startOffset } from "./cursor.ts"
import {
  COMMUNITY_FEED_CAP,
  FORUM_PAGE,
  getCommunity,
  getCommunityPosts,
  getForumPost,
  getForumUser,
  getThread
} from "./forum.ts"
import { communityTable } from "./forum-core.ts"
import { FORUM_SEARCH_CAP, forumSearch } from "./forum-search.ts"
import { accountIndex, getTweets, profile, TWEETS_PAGE } from "./microblog.ts"
import { getTweet, getTweetReplies, REPLIES_MAX, REPLIES_PAGE } from "./microblog-replies.ts"
import { accountsByTopic, MICROBLOG_SEARCH_CAP, microblogSearch } from "./microblog-search.ts"
import { person, personIndexBySlug, personIndexByUrn } from "./people.ts"
import { peopleTable } from "./people-index.ts"
import { PEOPLE_SEARCH_CAP, searchPeople } from "./people-search.ts"
import { COMPANY_AUTHOR, PERSON_AUTHOR, postCountOf, profnetPost, profnetPostById } from "./profnet-posts.ts"
import { SIZES } from "./sizes.ts"
import { resolveForumUrl, resolveMicroblogUrl, resolveProfnetUrl } from "./urls.ts"

export { InvalidCursor } from "./cursor.ts"
export { SIZES } from "./sizes.ts"

/** Page sizes and depth caps, for callers that explain paging to their own clients. */
export const LIMITS = {
  profnetPostsPage: 10,
  peopleSearchCap: PEOPLE_SEARCH_CAP,
  forumPage: FORUM_PAGE,
  forumSearchCap: FORUM_SEARCH_CAP,
  communityFeedCap: COMMUNITY_FEED_CAP,
  tweetsPage: TWEETS_PAGE,
  tweetRepliesPage: REPLIES_PAGE,
  tweetRepliesCap: REPLIES_MAX,
  microblogSearchCap: MICROBLOG_SEARCH_CAP,
  threadCommentsMax: 500
} as const

/**
 * A deterministic simulated upstream: every answer is a pure function of the seed and the
 * arguments. Lookups return undefined for unknown, forged or private identifiers; paged calls
 * return `InvalidCursor` for a cursor issued for another query (or another world).
 */
export interface World {
  readonly seed: string
  readonly sizes: typeof SIZES
  // profnet
  getPerson(ref: PersonRef): Person | undefined
  searchPeople(
    query: PeopleQuery,
    cursor: string | undefined,
    limit: number
  ): Page<PeopleSearchResult> | InvalidCursor
  getCompany(ref: CompanyRef): Company | undefined
  companyByNumericId(id: string): Company | undefined
  closestDomains(domain: string, n: number): ReadonlyArray<string>
  getPersonPosts(slugOrUrn: string, cursor: string | undefined): Page<ProfnetPost> | InvalidCursor | undefined
  getCompanyPosts(slug: string, cursor: string | undefined): Page<ProfnetPost> | InvalidCursor | undefined
  getProfnetPost(activityUrnOrId: string): ProfnetPost | undefined
  resolveProfnetUrl(url: string): ProfnetUrlResolution | undefined
  // forum
  forumSearch(query: ForumSearchQuery, cursor: string | undefined): Page<ForumSearchItem> | InvalidCursor
  getCommunity(name: string, includeSettings: boolean): Community | undefined
  getCommunityPosts(
    name: string,
    sort: CommunitySort,
    range: ForumRange,
    cursor: string | undefined
  ): Page<ForumPostSummary> | InvalidCursor | undefined
  getForumUser(username: string, sections: ReadonlyArray<ForumUserSection>): ForumUser | undefined
  /** Aligned with `ids` (post ids or permalinks); undefined where no such post exists. */
  getForumPosts(ids: ReadonlyArray<string>): ReadonlyArray<ForumPost | undefined>
  getThread(id: string, commentLimit: number, commentSort: CommentSort): ForumThread | undefined
  resolveForumUrl(url: string): ForumUrlResolution | undefined
  // microblog
  microblogSearch(query: MicroblogSearchQuery, cursor: string | undefined): Page<Tweet> | InvalidCursor
  getMicroblogProfile(ref: MicroblogProfileRef): MicroblogProfile | undefined
  getTweets(
    handleOrId: string,
    includeReplies: boolean,
    cursor: string | undefined
  ): Page<Tweet> | InvalidCursor | undefined
  getTweet(id: string): Tweet | undefined
  /** Undefined when no such tweet exists; a tweet without replies has an empty page. */
  getTweetReplies(
    id: string,
    sort: MicroblogSort,
    cursor: string | undefined
  ): Page<Tweet> | InvalidCursor | undefined
  resolveMicroblogUrl(url: string): MicroblogUrlResolution | undefined
}

const contexts = new WeakMap<World, Ctx>()

/**
 * Builds a world's lazy search tables now (about half a second, ~12 MB) instead of on its first
 * search. Kept outside `World` so that the interface lists upstream calls only.
 */
export const warmUp = (world: World): void => {
  const ctx = contexts.get(world)
  if (ctx === undefined) return
  peopleTable(ctx)
  companyNames(ctx)
  communityTable(ctx)
  accountsByTopic(ctx)
}

/** The world of `seed`, its URLs on `hosts` (the default hosts unless given). */
export const makeWorld = (seed: string | number, hosts: Hosts = defaultHosts): World => {
  const ctx = makeCtx(seed, hosts)

  const authorPosts = (
    kind: number,
    index: number,
    cursor: string | undefined
  ): Page<ProfnetPost> | InvalidCursor => {
    const scope = scopeOf(ctx.seedKey, "profnetPosts", [kind, index])
    const offset = startOffset(cursor, scope)
    if (offset === undefined) return InvalidCursor
    const count = postCountOf(ctx, kind, index)
    const items: Array<ProfnetPost> = []
    for (let k = offset; k < Math.min(count, offset + LIMITS.profnetPostsPage); k++) {
      const p = profnetPost(ctx, kind, index, k)
      if (p !== undefined) items.push(p)
    }
    const next = offset + LIMITS.profnetPostsPage
    return page(items, next < count ? next : undefined, scope)
  }

  /** A post id, or the post a permalink (of the post or one of its comments) points at. */
  const forumPostRef = (idOrUrl: string): string | undefined => {
    if (!idOrUrl.includes("/")) return idOrUrl
    const r = resolveForumUrl(ctx, idOrUrl)
    return r === undefined ? undefined : r.type === "post" ? r.id : (r.post_id ?? undefined)
  }

  const world: World = {
    seed: ctx.seed,
    sizes: SIZES,
    getPerson: (ref) => {
      const i = "slug" in ref ? personIndexBySlug(ctx, ref.slug) : personIndexByUrn(ctx, ref.urn)
      return i === undefined ? undefined : person(ctx, i)
    },
    searchPeople: (query, cursor, limit) => searchPeople(ctx, query, cursor, limit),
    getCompany: (ref) => {
      const c = "slug" in ref ? companyIndexBySlug(ctx, ref.slug) : companyIndexByDomain(ctx, ref.domain)
      return c === undefined ? undefined : company(ctx, c)
    },
    companyByNumericId: (id) => {
      const c = companyIndexByNumericId(ctx, id)
      return c === undefined ? undefined : company(ctx, c)
    },
    closestDomains: (domain, n) => closestDomains(ctx, domain, n),
    getPersonPosts: (slugOrUrn, cursor) => {
      const i = slugOrUrn.startsWith("urn:")
        ? personIndexByUrn(ctx, slugOrUrn)
        : personIndexBySlug(ctx, slugOrUrn)
      return i === undefined ? undefined : authorPosts(PERSON_AUTHOR, i, cursor)
    },
    getCompanyPosts: (slug, cursor) => {
      const c = companyIndexBySlug(ctx, slug)
      return c === undefined ? undefined : authorPosts(COMPANY_AUTHOR, c, cursor)
    },
    getProfnetPost: (id) => profnetPostById(ctx, id),
    resolveProfnetUrl: (url) => resolveProfnetUrl(ctx, url),
    forumSearch: (query, cursor) => forumSearch(ctx, query, cursor),
    getCommunity: (name, includeSettings) => getCommunity(ctx, name, includeSettings),
    getCommunityPosts: (name, sort, range, cursor) => getCommunityPosts(ctx, name, sort, range, cursor),
    getForumUser: (username, sections) => getForumUser(ctx, username, sections),
    getForumPosts: (ids) =>
      ids.map((id) => {
        const ref = forumPostRef(id.trim())
        return ref === undefined ? undefined : getForumPost(ctx, ref)
      }),
    getThread: (id, commentLimit, commentSort) => {
      const ref = forumPostRef(id.trim())
      return ref === undefined ? undefined : getThread(ctx, ref, commentLimit, commentSort)
    },
    resolveForumUrl: (url) => resolveForumUrl(ctx, url),
    microblogSearch: (query, cursor) => microblogSearch(ctx, query, cursor),
    getMicroblogProfile: (ref) => {
      const a = accountIndex(ctx, ref)
      return a === undefined ? undefined : profile(ctx, a)
    },
    getTweets: (handleOrId, includeReplies, cursor) => getTweets(ctx, handleOrId, includeReplies, cursor),
    getTweet: (id) => getTweet(ctx, id),
    getTweetReplies: (id, sort, cursor) => getTweetReplies(ctx, id, sort, cursor),
    resolveMicroblogUrl: (url) => resolveMicroblogUrl(ctx, url)
  }
  contexts.set(world, ctx)
  return world
}
