import { Schema } from "effect"
import {
  CommentSort,
  CommunitySort,
  CompanyRef,
  ForumRange,
  ForumSearchQuery,
  ForumUserSection,
  MicroblogProfileRef,
  MicroblogSearchQuery,
  MicroblogSort,
  PeopleQuery,
  PersonRef
} from "../contract.ts"
import type { Args, Method } from "../Upstream.ts"

const Str = Schema.String
const Cursor = Schema.UndefinedOr(Schema.String)
const Tuple = Schema.Tuple

/**
 * The positional arguments of every upstream method, as the provider contract carries them
 * (after top-level JSON nulls are read back as undefined). The server decodes with these.
 */
export const argsSchemas = {
  getPerson: Tuple([PersonRef]),
  searchPeople: Tuple([PeopleQuery, Cursor, Schema.Int]),
  getCompany: Tuple([CompanyRef]),
  companyByNumericId: Tuple([Str]),
  closestDomains: Tuple([Str, Schema.Int]),
  getPersonPosts: Tuple([Str, Cursor]),
  getCompanyPosts: Tuple([Str, Cursor]),
  getProfnetPost: Tuple([Str]),
  resolveProfnetUrl: Tuple([Str]),
  forumSearch: Tuple([ForumSearchQuery, Cursor]),
  getCommunity: Tuple([Str, Schema.Boolean]),
  getCommunityPosts: Tuple([Str, CommunitySort, ForumRange, Cursor]),
  getForumUser: Tuple([Str, Schema.Array(ForumUserSection)]),
  getForumPosts: Tuple([Schema.Array(Str)]),
  getThread: Tuple([Str, Schema.Int, CommentSort]),
  resolveForumUrl: Tuple([Str]),
  microblogSearch: Tuple([MicroblogSearchQuery, Cursor]),
  getMicroblogProfile: Tuple([MicroblogProfileRef]),
  getTweets: Tuple([Str, Schema.Boolean, Cursor]),
  getTweet: Tuple([Str]),
  getTweetReplies: Tuple([Str, MicroblogSort, Cursor]),
  resolveMicroblogUrl: Tuple([Str])
} satisfies { readonly [M in Method]: Schema.Decoder<Readonly<Args<M>>> }

type Assert<T extends true> = T
/** Fails the typecheck when a schema above rejects arguments its method accepts. */
export type ArgsSchemasAcceptEveryArgument = Assert<
  {
    [M in Method]: Readonly<Args<M>> extends (typeof argsSchemas)[M]["Type"] ? true : false
  }[Method]
>
