import { Schema } from "effect"

/**
 * The public records the envelopes carry, and the words (sorts, ranges, sections) parameters and
 * records share. The upstream interface (`src/upstream/methods.ts`) answers in these terms, so they
 * cross an HTTP provider contract as JSON too: every field is JSON-safe, timestamps are ISO-8601
 * UTC strings, absent values are null.
 */

const Iso = Schema.String
const Count = Schema.Int
const Str = Schema.String
const NullStr = Schema.NullOr(Schema.String)

// ---------------------------------------------------------------- profnet

export const CurrentPosition = Schema.Struct({ title: Str, company_name: Str, company_slug: NullStr })
export type CurrentPosition = typeof CurrentPosition.Type

/** `start` and `end` are `YYYY-MM`; `end` is null for the current role. */
export const Experience = Schema.Struct({
  title: Str,
  company_name: Str,
  company_slug: NullStr,
  start: Str,
  end: NullStr,
  description: Str
})
export type Experience = typeof Experience.Type

export const Education = Schema.Struct({
  school: Str,
  degree: Str,
  field: Str,
  start_year: Count,
  end_year: Count
})
export type Education = typeof Education.Type

export const Person = Schema.Struct({
  urn: Str,
  public_identifier: Str,
  name: Str,
  first_name: Str,
  last_name: Str,
  headline: Str,
  location: Str,
  current_position: Schema.NullOr(CurrentPosition),
  follower_count: Count,
  connection_count: Count,
  profile_url: Str,
  is_anonymous: Schema.Boolean,
  about: Str,
  experience: Schema.Array(Experience),
  education: Schema.Array(Education),
  skills: Schema.Array(Str)
})
export type Person = typeof Person.Type

/** Anonymous results read "Profnet Member", carry no public identifier and cannot be fetched. */
export const PeopleSearchResult = Schema.Struct({
  name: Str,
  position: Str,
  location: Str,
  urn: Str,
  public_identifier: NullStr,
  is_anonymous: Schema.Boolean
})
export type PeopleSearchResult = typeof PeopleSearchResult.Type

export const Company = Schema.Struct({
  urn: Str,
  numeric_id: Str,
  slug: Str,
  name: Str,
  description: Str,
  industry: Str,
  employee_count: Count,
  headquarters: Str,
  website: Str,
  domain: Str,
  founded_year: Count,
  specialities: Schema.Array(Str),
  url: Str
})
export type Company = typeof Company.Type

export const ProfnetPostAuthor = Schema.Struct({
  type: Schema.Literals(["person", "company"]),
  name: Str,
  identifier: Str,
  urn: Str
})
export type ProfnetPostAuthor = typeof ProfnetPostAuthor.Type

export const ProfnetPost = Schema.Struct({
  urn: Str,
  text: Str,
  created_at: Iso,
  author: ProfnetPostAuthor,
  likes: Count,
  comments_count: Count,
  shares: Count,
  is_repost: Schema.Boolean,
  url: Str
})
export type ProfnetPost = typeof ProfnetPost.Type

/** For a post, `id` is the activity URN and `handle` the author's identifier. */
export const ProfnetUrlResolution = Schema.Struct({
  type: Schema.Literals(["person", "company", "post"]),
  id: Str,
  handle: Str,
  canonical_url: Str
})
export type ProfnetUrlResolution = typeof ProfnetUrlResolution.Type

// ---------------------------------------------------------------- forum

const summaryBase = { id: Str, author: Str, community: Str, upvotes: Count, created_at: Iso, permalink: Str }

export const ForumPostSummary = Schema.Struct({
  kind: Schema.Literal("post"),
  ...summaryBase,
  title: Str,
  comment_count: Count
})
export type ForumPostSummary = typeof ForumPostSummary.Type

/** `comment_count` is the comment count of the post the comment belongs to. */
export const ForumCommentSummary = Schema.Struct({
  kind: Schema.Literal("comment"),
  ...summaryBase,
  post_id: Str,
  text: Str,
  comment_count: Count
})
export type ForumCommentSummary = typeof ForumCommentSummary.Type

export const ForumCommunitySummary = Schema.Struct({
  kind: Schema.Literal("community"),
  id: Str,
  name: Str,
  title: Str,
  description: Str,
  subscribers: Count,
  created_at: Iso,
  nsfw: Schema.Boolean,
  permalink: Str
})
export type ForumCommunitySummary = typeof ForumCommunitySummary.Type

export const ForumUserSummary = Schema.Struct({
  kind: Schema.Literal("user"),
  id: Str,
  username: Str,
  karma: Count,
  created_at: Iso,
  permalink: Str
})
export type ForumUserSummary = typeof ForumUserSummary.Type

export const ForumSearchItem = Schema.Union([
  ForumPostSummary,
  ForumCommentSummary,
  ForumCommunitySummary,
  ForumUserSummary
])
export type ForumSearchItem = typeof ForumSearchItem.Type

export const CommunityRule = Schema.Struct({ title: Str, description: Str })
export type CommunityRule = typeof CommunityRule.Type

/** `rules` and `moderators` are present only when settings were requested. */
export const Community = Schema.Struct({
  id: Str,
  name: Str,
  title: Str,
  description: Str,
  subscribers: Count,
  active_users: Count,
  created_at: Iso,
  nsfw: Schema.Boolean,
  topics: Schema.Array(Str),
  url: Str,
  rules: Schema.optionalKey(Schema.Array(CommunityRule)),
  moderators: Schema.optionalKey(Schema.Array(Str))
})
export type Community = typeof Community.Type

export const ForumUser = Schema.Struct({
  id: Str,
  username: Str,
  karma: Count,
  post_karma: Count,
  comment_karma: Count,
  created_at: Iso,
  profile_url: Str,
  posts: Schema.optionalKey(Schema.Array(ForumPostSummary)),
  comments: Schema.optionalKey(Schema.Array(ForumCommentSummary))
})
export type ForumUser = typeof ForumUser.Type

/** `url` is the post's own permalink: every post is a text post. */
export const ForumPost = Schema.Struct({
  ...summaryBase,
  title: Str,
  body: Str,
  url: Str,
  comment_count: Count
})
export type ForumPost = typeof ForumPost.Type

/** `parent_id` is null for a top-level comment; `depth` 0 is top level. */
export const ForumComment = Schema.Struct({
  id: Str,
  post_id: Str,
  parent_id: NullStr,
  author: Str,
  text: Str,
  upvotes: Count,
  created_at: Iso,
  depth: Count,
  permalink: Str
})
export type ForumComment = typeof ForumComment.Type

export const ForumThread = Schema.Struct({ post: ForumPost, comments: Schema.Array(ForumComment) })
export type ForumThread = typeof ForumThread.Type

export const ForumUrlResolution = Schema.Struct({
  type: Schema.Literals(["post", "comment", "community", "user"]),
  id: Str,
  community: NullStr,
  post_id: NullStr,
  username: NullStr,
  canonical_url: Str
})
export type ForumUrlResolution = typeof ForumUrlResolution.Type

// ---------------------------------------------------------------- microblog

export const MicroblogProfile = Schema.Struct({
  id: Str,
  handle: Str,
  name: Str,
  bio: Str,
  location: Str,
  followers: Count,
  following: Count,
  tweet_count: Count,
  created_at: Iso,
  verified: Schema.Boolean,
  url: Str
})
export type MicroblogProfile = typeof MicroblogProfile.Type

export const TweetAuthor = Schema.Struct({ id: Str, handle: Str, name: Str })
export type TweetAuthor = typeof TweetAuthor.Type

export const Tweet = Schema.Struct({
  id: Str,
  text: Str,
  created_at: Iso,
  author: TweetAuthor,
  likes: Count,
  reposts: Count,
  replies: Count,
  quotes: Count,
  views: Count,
  lang: Str,
  is_repost: Schema.Boolean,
  is_reply: Schema.Boolean,
  url: Str
})
export type Tweet = typeof Tweet.Type

export const MicroblogUrlResolution = Schema.Struct({
  type: Schema.Literals(["profile", "tweet"]),
  id: Str,
  handle: Str,
  canonical_url: Str
})
export type MicroblogUrlResolution = typeof MicroblogUrlResolution.Type

// ---------------------------------------------------------------- vocabulary

export const ForumSearchType = Schema.Literals(["posts", "comments", "communities", "users"])
export type ForumSearchType = typeof ForumSearchType.Type
export const ForumSort = Schema.Literals(["relevance", "top", "new", "hot", "comment_count"])
export type ForumSort = typeof ForumSort.Type
export const ForumRange = Schema.Literals([
  "past_hour",
  "today",
  "past_week",
  "past_month",
  "past_year",
  "all_time"
])
export type ForumRange = typeof ForumRange.Type

export const CommunitySort = Schema.Literals(["hot", "new", "top", "rising"])
export type CommunitySort = typeof CommunitySort.Type
export const CommentSort = Schema.Literals(["top", "new", "old"])
export type CommentSort = typeof CommentSort.Type
export const ForumUserSection = Schema.Literals(["posts", "comments"])
export type ForumUserSection = typeof ForumUserSection.Type

export const MicroblogSort = Schema.Literals(["latest", "top"])
export type MicroblogSort = typeof MicroblogSort.Type

// ---------------------------------------------------------------- pages

/** The data of a paged operation: `{ [field]: items, cursor }`; `cursor` is null on the last page. */
export const pageData = <const F extends string, S extends Schema.Top>(field: F, item: S) =>
  Schema.Struct({ [field]: Schema.Array(item), cursor: Schema.NullOr(Schema.String) } as {
    readonly [K in F]: Schema.$Array<S>
  } & { readonly cursor: Schema.NullOr<Schema.String> })
