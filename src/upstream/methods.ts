import { Record, Schema } from "effect"
import {
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
} from "../contract/records.ts"
import type { Platform } from "../domain/plans.ts"
import {
  Absent,
  CompanyRef,
  ForumSearchQuery,
  InvalidCursor,
  MicroblogProfileRef,
  MicroblogSearchQuery,
  Page,
  PeopleQuery,
  PersonRef
} from "./contract.ts"

/** What one upstream call takes (positional arguments) and answers, and whose platform it reads. */
export interface MethodDeclaration {
  readonly platform: Platform
  readonly args: Schema.ConstraintCodec<ReadonlyArray<unknown>, ReadonlyArray<unknown>>
  readonly answer: Schema.ConstraintCodec<unknown, unknown>
}

const Str = Schema.String
const Int = Schema.Int
/** A first page has no cursor. */
const Cursor = Absent(Str)
/** A page, or `"invalid_cursor"` for a cursor issued for another query. */
const Paged = <S extends Schema.Constraint>(item: S) =>
  Schema.Union([Page(item), Schema.Literal(InvalidCursor)])
/** A page of an owner (a person, a community, an account) that may not exist. */
const OwnedPages = <S extends Schema.Constraint>(item: S) => Absent(Paged(item))

/** A method of `platform`: its positional arguments and its answer. */
const on =
  (platform: Platform) =>
  <const A extends ReadonlyArray<Schema.Constraint>, R extends Schema.Constraint>(args: A, answer: R) => ({
    platform,
    args: Schema.Tuple(args),
    answer
  })
const profnet = on("profnet")
const forum = on("forum")
const microblog = on("microblog")

/**
 * Every upstream call the operations make, declared once: the in-process world and the HTTP
 * provider implement these, and the provider contract carries them by name as JSON (the schemas'
 * encoded side). Lookups answer undefined (null on the wire) for what does not exist.
 */
export const upstreamMethods = {
  getPerson: profnet([PersonRef], Absent(Person)),
  searchPeople: profnet([PeopleQuery, Cursor, Int], Paged(PeopleSearchResult)),
  getCompany: profnet([CompanyRef], Absent(Company)),
  companyByNumericId: profnet([Str], Absent(Company)),
  closestDomains: profnet([Str, Int], Schema.Array(Str)),
  getPersonPosts: profnet([Str, Cursor], OwnedPages(ProfnetPost)),
  getCompanyPosts: profnet([Str, Cursor], OwnedPages(ProfnetPost)),
  getProfnetPost: profnet([Str], Absent(ProfnetPost)),
  resolveProfnetUrl: profnet([Str], Absent(ProfnetUrlResolution)),
  forumSearch: forum([ForumSearchQuery, Cursor], Paged(ForumSearchItem)),
  getCommunity: forum([Str, Schema.Boolean], Absent(Community)),
  getCommunityPosts: forum([Str, CommunitySort, ForumRange, Cursor], OwnedPages(ForumPostSummary)),
  getForumUser: forum([Str, Schema.Array(ForumUserSection)], Absent(ForumUser)),
  /** One entry per id (a post id or permalink), absent where no such post exists. */
  getForumPosts: forum([Schema.Array(Str)], Schema.Array(Absent(ForumPost))),
  getThread: forum([Str, Int, CommentSort], Absent(ForumThread)),
  resolveForumUrl: forum([Str], Absent(ForumUrlResolution)),
  microblogSearch: microblog([MicroblogSearchQuery, Cursor], Paged(Tweet)),
  getMicroblogProfile: microblog([MicroblogProfileRef], Absent(MicroblogProfile)),
  getTweets: microblog([Str, Schema.Boolean, Cursor], OwnedPages(Tweet)),
  getTweet: microblog([Str], Absent(Tweet)),
  /** Absent when no such tweet exists; a tweet without replies has an empty page. */
  getTweetReplies: microblog([Str, MicroblogSort, Cursor], OwnedPages(Tweet)),
  resolveMicroblogUrl: microblog([Str], Absent(MicroblogUrlResolution))
} satisfies { readonly [name: string]: MethodDeclaration }

export type UpstreamMethods = typeof upstreamMethods
export type Method = keyof UpstreamMethods
/** The arguments of `M` as callers pass them (a first page's cursor is undefined). */
export type Args<M extends Method> = UpstreamMethods[M]["args"]["Type"]
/** The answer of `M` as callers see it (undefined where nothing exists). */
export type Answer<M extends Method> = UpstreamMethods[M]["answer"]["Type"]

/** An implementation of every method: what the world provides in process. */
export type Implementation = { readonly [M in Method]: (...args: Args<M>) => Answer<M> }

/** True when `W` takes every method's declared arguments and answers only what the method declares. */
export type ImplementsUpstream<W> = {
  [M in Method]: M extends keyof W
    ? W[M] extends (...args: infer P) => infer A
      ? [Args<M>] extends [Readonly<P>]
        ? [A] extends [Answer<M>]
          ? true
          : false
        : false
      : false
    : false
}[Method]
export const methodPlatform: { readonly [M in Method]: Platform } = Record.map(
  upstreamMethods,
  (declaration) => declaration.platform
)

export const isMethod = (name: string): name is Method => Object.hasOwn(upstreamMethods, name)
