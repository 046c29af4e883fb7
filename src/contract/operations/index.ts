import type { AnyDeclaration } from "../declaration.ts"
import * as forum from "./forum.ts"
import * as microblog from "./microblog.ts"
import * as profnet from "./profnet.ts"

/**
 * Every data operation the contract declares, in the registry's order: the `/v1` HttpApi
 * (`makeApi(declarations)`) and so a typed client need nothing else.
 */
export const declarations = [
  profnet.resolveUrl,
  profnet.getProfile,
  profnet.searchPeople,
  profnet.getCompany,
  profnet.getPosts,
  forum.forumSearch,
  forum.getCommunity,
  forum.getCommunityPosts,
  forum.getForumUser,
  forum.getForumPosts,
  forum.resolveForumUrl,
  microblog.microblogSearch,
  microblog.getMicroblogProfile,
  microblog.getTweets,
  microblog.getTweet,
  microblog.resolveMicroblogUrl,
  microblog.getTweetReplies
] as const satisfies ReadonlyArray<AnyDeclaration>
