import { Schema } from "effect"
import { defaultHosts } from "../../domain/identifiers/index.ts"
import { cursorPagesFor } from "../../domain/plans.ts"
import { prices } from "../../domain/pricing.ts"
import { declareOperation } from "../declaration.ts"
import { cursorParam } from "../parameters.ts"
import { MicroblogProfile, MicroblogSort, MicroblogUrlResolution, pageData, Tweet } from "../records.ts"

export const MicroblogSearchData = pageData("results", Tweet)

export const microblogSearch = declareOperation({
  id: "microblogSearch",
  summary: "Search tweets",
  description: `${defaultHosts.microblog} (microblog): tweets matching free text (words or @handles). 6 credits per page of up to 20 tweets (id, text, created_at, author {id, handle, name}, likes, reposts, replies, quotes, views, lang, is_repost, is_reply, url) plus a cursor; each cursor page is a new 6-credit call (${cursorPagesFor}). sort: latest (default, newest first) or top (most liked among recent matches). Depth is capped upstream per query. To read one account's timeline use getTweets; for one tweet by id or URL use getTweet.`,
  platform: "microblog",
  path: "/microblog/search",
  kind: "microblog_search",
  common: true,
  params: Schema.Struct({
    query: Schema.String.check(Schema.isMaxLength(512)).annotate({
      description: "Free-text search terms or @handles (at most 512 characters)."
    }),
    sort: Schema.optionalKey(MicroblogSort).annotate({ description: "latest (default) or top." }),
    cursor: cursorParam()
  }),
  examples: { query: "ai", sort: "latest" },
  data: MicroblogSearchData,
  price: { rule: prices.microblogSearch, summary: "6 credits per page." }
})

const MicroblogIdentifier = Schema.String.annotate({
  description: `Handle (with or without @), a \`${defaultHosts.microblog}/<handle>\` URL, or a numeric user id.`
})

export const getMicroblogProfile = declareOperation({
  id: "getMicroblogProfile",
  summary: "Get a microblog account",
  description: `${defaultHosts.microblog} (microblog): one account, its id, handle, name, bio, location, followers, following, tweet_count, created_at, verified and url. 4 credits. identifier: the handle (with or without @), a profile URL (tracking parameters, www/m hosts cleaned) or the numeric user id. It returns no tweets: use getTweets for the timeline. There is no search by name; find accounts through microblogSearch results.`,
  platform: "microblog",
  path: "/microblog/profiles",
  kind: "microblog_profile",
  common: true,
  params: Schema.Struct({
    identifier: MicroblogIdentifier
  }),
  examples: { identifier: "@thecarlos53759" },
  data: MicroblogProfile,
  price: { rule: prices.getMicroblogProfile, summary: "4 credits." }
})

export const TweetsData = pageData("tweets", Tweet)

export const getTweets = declareOperation({
  id: "getTweets",
  summary: "List an account's tweets",
  description: `${defaultHosts.microblog} (microblog): one page (up to 20, newest first) of an account's tweets, with full metrics (likes, reposts, replies, quotes, views), and a cursor for older ones. 4 credits per page; each cursor page is a new 4-credit call (${cursorPagesFor}). Replies are left out unless include_replies=true; reposts are included (is_repost). identifier: handle (with or without @), profile URL or numeric user id. For one tweet use getTweet; for tweets by keywords use microblogSearch; for the account's details use getMicroblogProfile.`,
  platform: "microblog",
  path: "/microblog/tweets",
  kind: "tweets",
  common: true,
  params: Schema.Struct({
    identifier: MicroblogIdentifier,
    include_replies: Schema.optionalKey(Schema.Boolean).annotate({
      description: "true includes the account's replies. Default false."
    }),
    cursor: cursorParam("From a previous page, for older tweets.")
  }),
  examples: { identifier: "thecarlos53759", include_replies: false },
  data: TweetsData,
  price: { rule: prices.getTweets, summary: "4 credits per page." }
})

const TweetId = Schema.String.annotate({
  description: `Numeric tweet id or a \`${defaultHosts.microblog}/<handle>/status/<id>\` URL.`
})

export const getTweet = declareOperation({
  id: "getTweet",
  summary: "Get one tweet",
  description: `${defaultHosts.microblog} (microblog): one tweet with full metrics: id, text, created_at, author {id, handle, name}, likes, reposts, replies, quotes, views, lang, is_repost, is_reply, url. 4 credits. id: the numeric tweet id or a status URL (\`${defaultHosts.microblog}/<handle>/status/<id>\`; tracking parameters and www/m hosts cleaned). For an account's timeline use getTweets; to search tweets use microblogSearch.`,
  platform: "microblog",
  path: "/microblog/tweet",
  kind: "tweet",
  common: true,
  params: Schema.Struct({ id: TweetId }),
  examples: { id: "2165286205794436055" },
  data: Tweet,
  price: { rule: prices.getTweet, summary: "4 credits." }
})

export const resolveMicroblogUrl = declareOperation({
  id: "resolveMicroblogUrl",
  summary: "Resolve a microblog URL",
  description: `${defaultHosts.microblog} (microblog): what a URL points at (profile or tweet), before fetching: type, id, handle and canonical_url. 2 credits. Tracking parameters, www/m hosts and trailing slashes are tolerated. Then use the handle or id with getMicroblogProfile or getTweets, or the tweet id with getTweet. Skip it when a handle, id or clean URL is already known: those operations take URLs directly.`,
  platform: "microblog",
  path: "/microblog/resolve-url",
  kind: "microblog_url_resolution",
  common: false,
  params: Schema.Struct({
    url: Schema.String.annotate({ description: `A ${defaultHosts.microblog} profile or status URL.` })
  }),
  examples: { url: `https://${defaultHosts.microblog}/thecarlos53759/status/2165286205794436055` },
  data: MicroblogUrlResolution,
  price: { rule: prices.resolveMicroblogUrl, summary: "2 credits." }
})

export const TweetRepliesData = pageData("replies", Tweet)

export const getTweetReplies = declareOperation({
  id: "getTweetReplies",
  summary: "List replies to a tweet",
  description: `${defaultHosts.microblog} (microblog): one page (up to 20) of the replies to a tweet, each a full tweet (same fields as getTweet; is_reply=true, text starting with @ the parent's author), and a cursor for more; a tweet without replies gives an empty page. sort: top (default, most liked first) or latest (newest first). At most 100 replies per tweet are listed (5 pages), even when its replies count is higher. 4 credits per page; each cursor page is a new 4-credit call (${cursorPagesFor}). id: the numeric tweet id or a status URL (\`${defaultHosts.microblog}/<handle>/status/<id>\`). For the tweet itself use getTweet.`,
  platform: "microblog",
  path: "/microblog/tweet/replies",
  kind: "tweet_replies",
  common: true,
  params: Schema.Struct({
    id: TweetId,
    sort: Schema.optionalKey(MicroblogSort).annotate({
      description: "top (default): most liked first; latest: newest first."
    }),
    cursor: cursorParam("From a previous page of the same id and sort, for more replies.")
  }),
  examples: { id: "2165380860751531724", sort: "top" },
  data: TweetRepliesData,
  price: { rule: prices.getTweetReplies, summary: "4 credits per page." }
})
