import { Effect, Schema } from "effect"
import { pageData, Tweet } from "../../contract/records.ts"
import { hosts, parseMicroblogAccount } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { cleaned, fetchVia, pageResult } from "../support.ts"
import { MicroblogIdentifier } from "./getMicroblogProfile.ts"

export const TweetsData = pageData("tweets", Tweet)

export const getTweets = defineOperation({
  id: "getTweets",
  platform: "microblog",
  path: "/microblog/tweets",
  kind: "tweets",
  description: `One page (up to 20, newest first) of a ${hosts.microblog} account's tweets, with full metrics (likes, reposts, replies, quotes, views), and a cursor for older ones. 4 credits per page; each cursor page is a new 4-credit call (paid keys only; trial keys get first pages). Replies are left out unless include_replies=true; reposts are included (is_repost). identifier: handle (with or without @), profile URL or numeric user id. For one tweet use getTweet; for tweets by keywords use microblogSearch; for the account's details use getMicroblogProfile.`,
  common: true,
  params: Schema.Struct({
    identifier: MicroblogIdentifier,
    include_replies: Schema.optionalKey(Schema.Boolean).annotate({
      description: "true includes the account's replies. Default false."
    }),
    cursor: Schema.optionalKey(Schema.String).annotate({
      description: "From a previous page, for older tweets."
    })
  }),
  data: TweetsData,
  prepare: (params) =>
    Effect.map(cleaned("identifier", parseMicroblogAccount(params.identifier)), (account) => ({
      args: { account, include_replies: params.include_replies ?? false, cursor: params.cursor },
      quote: prices.getTweets(),
      continuation: params.cursor !== undefined
    })),
  run: ({ account, include_replies, cursor }, context) =>
    Effect.gen(function* () {
      const handleOrId = "handle" in account ? account.handle : account.id
      const fetched = yield* fetchVia(context.freshness, "getTweets", handleOrId, include_replies, cursor)
      return yield* pageResult(fetched, "tweets", `No ${hosts.microblog} account with this handle or id.`)
    })
})
