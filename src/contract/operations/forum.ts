import { Schema } from "effect"
import { defaultHosts } from "../../domain/identifiers/index.ts"
import { cursorPagesFor } from "../../domain/plans.ts"
import { prices } from "../../domain/pricing.ts"
import { declareOperation } from "../declaration.ts"
import { CommaList, cursorParam } from "../parameters.ts"
import {
  CommentSort,
  Community,
  CommunitySort,
  ForumPost,
  ForumPostSummary,
  ForumRange,
  ForumSearchItem,
  ForumSearchType,
  ForumSort,
  ForumThread,
  ForumUrlResolution,
  ForumUser,
  ForumUserSection,
  pageData
} from "../records.ts"

export const ForumSearchData = pageData("results", ForumSearchItem)

export const forumSearch = declareOperation({
  id: "forumSearch",
  summary: "Search forum posts, communities or users",
  description: `${defaultHosts.forum} (forum): posts (default), comments, communities or users matching free text. 6 credits per page of up to 10 summaries (author, title or comment text, upvotes, comment_count, created_at, permalink, id) plus a cursor; each cursor page is a new 6-credit call (${cursorPagesFor}). sort: relevance (default), top, new, hot or comment_count for posts; relevance, top or new for comments; not accepted for communities and users. range (past_hour, today, past_week, past_month, past_year, all_time; default all_time) applies to posts only. Comment search has no time window: filter on created_at yourself and poll with sort=new. Depth is capped upstream at a few hundred results per query. query is free text, never a URL: identify a URL with resolveForumUrl, read posts and their discussion with getForumPosts, and use getCommunity or getCommunityPosts for a known community.`,
  platform: "forum",
  path: "/forum/search",
  kind: "forum_search",
  common: true,
  params: Schema.Struct({
    query: Schema.String.check(Schema.isMaxLength(256)).annotate({
      description: "Free-text search terms (at most 256 characters); not a URL."
    }),
    type: Schema.optionalKey(ForumSearchType).annotate({
      description: "posts (default), comments, communities or users."
    }),
    sort: Schema.optionalKey(ForumSort).annotate({
      description:
        "relevance (default), top, new, hot, comment_count for posts; relevance, top, new for comments; omit for communities and users."
    }),
    range: Schema.optionalKey(ForumRange).annotate({
      description: "Posts only: past_hour, today, past_week, past_month, past_year or all_time (default)."
    }),
    cursor: cursorParam()
  }),
  examples: { query: "python", type: "posts", sort: "top", range: "past_month" },
  data: ForumSearchData,
  price: { rule: prices.forumSearch, summary: "6 credits per page." }
})

const CommunityName = Schema.String.annotate({
  description: `Community name without the prefix (e.g. "python"), \`c/<name>\`, or a \`${defaultHosts.forum}/c/<name>\` URL.`
})

export const getCommunity = declareOperation({
  id: "getCommunity",
  summary: "Get a forum community",
  description: `${defaultHosts.forum} (forum): one community's details: title, description, subscribers, active_users, age (created_at), NSFW flag and topics. 4 credits; include_settings=true adds the rules and the moderator list for +2. It returns no posts: read the feed with getCommunityPosts, search inside it with forumSearch. community_name: the name without the prefix, or a community URL (tracking parameters, www/m hosts and trailing slashes are cleaned). Find communities by topic with forumSearch type=communities.`,
  platform: "forum",
  path: "/forum/communities",
  kind: "community",
  common: true,
  params: Schema.Struct({
    community_name: CommunityName,
    include_settings: Schema.optionalKey(Schema.Boolean).annotate({
      description: "true adds the rules and moderators (+2 credits). Default false."
    })
  }),
  examples: { community_name: "linuxcanada", include_settings: true },
  data: Community,
  price: { rule: prices.getCommunity, summary: "4 credits; +2 with include_settings=true." }
})

export const CommunityPostsData = pageData("posts", ForumPostSummary)

export const getCommunityPosts = declareOperation({
  id: "getCommunityPosts",
  summary: "List a community's posts",
  description: `${defaultHosts.forum} (forum): one page (up to 10) of a community's feed: post summaries (id, title, author, upvotes, comment_count, created_at, permalink) and a cursor. 4 credits per page; each cursor page is a new 4-credit call (${cursorPagesFor}). sort: hot (default), new, top or rising; range (past_hour, today, past_week, past_month, past_year, all_time; default all_time) only with sort=top. The feed reaches back at most about 1,000 posts. Use forumSearch to find posts by keywords across communities, getCommunity for the community's details, and getForumPosts (thread=true) to read a post with its discussion.`,
  platform: "forum",
  path: "/forum/communities/posts",
  kind: "community_posts",
  common: true,
  params: Schema.Struct({
    community_name: CommunityName,
    sort: Schema.optionalKey(CommunitySort).annotate({ description: "hot (default), new, top or rising." }),
    range: Schema.optionalKey(ForumRange).annotate({
      description:
        "Only with sort=top: past_hour, today, past_week, past_month, past_year or all_time (default)."
    }),
    cursor: cursorParam()
  }),
  examples: { community_name: "linuxcanada", sort: "top", range: "past_week" },
  data: CommunityPostsData,
  price: { rule: prices.getCommunityPosts, summary: "4 credits per page." }
})

export const getForumUser = declareOperation({
  id: "getForumUser",
  summary: "Get a forum user",
  description: `${defaultHosts.forum} (forum): one user, their id, username, karma (post and comment), account age and profile URL, plus the sections you ask for: posts (their recent post summaries) and comments (their recent comments). 4 credits, +2 per section (at most 2: 8 with both). username: the name with or without u/, or a profile URL (\`${defaultHosts.forum}/user/<name>\`). Find users by keywords with forumSearch type=users.`,
  platform: "forum",
  path: "/forum/users",
  kind: "forum_user",
  common: true,
  params: Schema.Struct({
    username: Schema.String.annotate({
      description: `Username (without u/) or a \`${defaultHosts.forum}/user/<name>\` URL.`
    }),
    sections: Schema.optionalKey(CommaList(ForumUserSection)).annotate({
      description: "Comma-separated: posts, comments, each at most once (+2 credits each)."
    })
  }),
  examples: { username: "usefulmuffin4664", sections: ["posts"] },
  data: ForumUser,
  price: { rule: prices.getForumUser, summary: "4 credits; +2 per section." }
})

export const ForumPostsData = Schema.Struct({
  posts: Schema.Array(ForumPost),
  missing: Schema.Array(Schema.String),
  thread: Schema.optionalKey(ForumThread)
})

export const getForumPosts = declareOperation({
  id: "getForumPosts",
  summary: "Get forum posts by id",
  description: `${defaultHosts.forum} (forum): posts in full (title, body, author, community, upvotes, comment_count, created_at, permalink) by id or permalink, 1 to 100 per call; ids that do not exist are listed in missing (NOT_FOUND only when none exists). 4 credits for up to 10 ids, +1 per further 10. thread=true reads one post's full discussion (exactly one id): comments in reading order, each after its parent, with parent_id and depth; comment_limit 1-500 (default 100), comment_sort top (default), new or old; it adds 4 credits (8 in all). A comment permalink reads the post it belongs to. Find posts with forumSearch or getCommunityPosts.`,
  platform: "forum",
  path: "/forum/posts",
  kind: "forum_posts",
  common: true,
  params: Schema.Struct({
    ids: CommaList(Schema.String).annotate({
      description: "Comma-separated forum post ids (e.g. 1abc2d) or permalinks, 1 to 100."
    }),
    thread: Schema.optionalKey(Schema.Boolean).annotate({
      description: "true: the full discussion of one post (+4 credits). Only with exactly one id."
    }),
    comment_limit: Schema.optionalKey(
      Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 500 }))
    ).annotate({ description: "With thread=true: at most this many comments, 1 to 500 (default 100)." }),
    comment_sort: Schema.optionalKey(CommentSort).annotate({
      description: "With thread=true: top (default), new or old."
    })
  }),
  examples: { ids: ["114hxr"], thread: true, comment_limit: 20 },
  data: ForumPostsData,
  price: {
    rule: prices.getForumPosts,
    summary: "4 credits for up to 10 ids, +1 per further 10; +4 with thread=true."
  }
})

export const resolveForumUrl = declareOperation({
  id: "resolveForumUrl",
  summary: "Resolve a forum URL",
  description: `${defaultHosts.forum} (forum): what a URL points at (post, comment, community or user), before fetching: type, id, community, post_id, username and canonical_url. 2 credits. Tracking parameters, www/m hosts and trailing slashes are tolerated. Then read a post (or a comment's post_id) with getForumPosts, a community with getCommunity or getCommunityPosts, a user with getForumUser. Skip it when you already have a permalink or name: those operations take URLs directly.`,
  platform: "forum",
  path: "/forum/resolve-url",
  kind: "forum_url_resolution",
  common: false,
  params: Schema.Struct({
    url: Schema.String.annotate({
      description: `A ${defaultHosts.forum} post, comment, community or user URL.`
    })
  }),
  examples: { url: `https://${defaultHosts.forum}/c/linuxcanada/comments/114hxr/` },
  data: ForumUrlResolution,
  price: { rule: prices.resolveForumUrl, summary: "2 credits." }
})
