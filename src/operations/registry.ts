import { forumSearch } from "./forum/forumSearch.ts"
import { getCommunity } from "./forum/getCommunity.ts"
import { getCommunityPosts } from "./forum/getCommunityPosts.ts"
import { getForumPosts } from "./forum/getForumPosts.ts"
import { getForumUser } from "./forum/getForumUser.ts"
import { resolveForumUrl } from "./forum/resolveForumUrl.ts"
import { getMicroblogProfile } from "./microblog/getMicroblogProfile.ts"
import { getTweet } from "./microblog/getTweet.ts"
import { getTweetReplies } from "./microblog/getTweetReplies.ts"
import { getTweets } from "./microblog/getTweets.ts"
import { microblogSearch } from "./microblog/microblogSearch.ts"
import { resolveMicroblogUrl } from "./microblog/resolveMicroblogUrl.ts"
import type { AnyOperation } from "./Operation.ts"
import { getCompany } from "./profnet/getCompany.ts"
import { getPosts } from "./profnet/getPosts.ts"
import { getProfile } from "./profnet/getProfile.ts"
import { resolveUrl } from "./profnet/resolveUrl.ts"
import { searchPeople } from "./profnet/searchPeople.ts"
import type { OperationServices } from "./support.ts"

/**
 * Every data operation of the service: the implementation of each declaration of
 * `src/contract/operations`, in the same order. REST routes, MCP tools and OpenAPI derive from this list.
 */
export const operations = [
  resolveUrl,
  getProfile,
  searchPeople,
  getCompany,
  getPosts,
  forumSearch,
  getCommunity,
  getCommunityPosts,
  getForumUser,
  getForumPosts,
  resolveForumUrl,
  microblogSearch,
  getMicroblogProfile,
  getTweets,
  getTweet,
  resolveMicroblogUrl,
  getTweetReplies
] as const satisfies ReadonlyArray<AnyOperation<OperationServices>>
