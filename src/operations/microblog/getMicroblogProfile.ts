import { Effect, Schema } from "effect"
import { MicroblogProfile } from "../../contract/records.ts"
import { hosts, parseMicroblogAccount } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const MicroblogIdentifier = Schema.String.annotate({
  description: `Handle (with or without @), a ${hosts.microblog}/<handle> URL, or a numeric user id.`
})

export const getMicroblogProfile = defineOperation({
  id: "getMicroblogProfile",
  platform: "microblog",
  path: "/microblog/profiles",
  kind: "microblog_profile",
  description: `One ${hosts.microblog} account: id, handle, name, bio, location, followers, following, tweet_count, created_at, verified and url. 4 credits. identifier: the handle (with or without @), a profile URL (tracking parameters, www/m hosts cleaned) or the numeric user id. It returns no tweets: use getTweets for the timeline. There is no search by name; find accounts through microblogSearch results.`,
  common: true,
  params: Schema.Struct({ identifier: MicroblogIdentifier }),
  data: MicroblogProfile,
  prepare: (params) =>
    Effect.map(cleaned("identifier", parseMicroblogAccount(params.identifier)), (account) => ({
      args: account,
      quote: prices.getMicroblogProfile()
    })),
  run: (account, context) =>
    Effect.gen(function* () {
      const fetched = yield* fetchVia(context.freshness, "getMicroblogProfile", account)
      if (fetched.value === undefined) {
        return yield* notFound(`No ${hosts.microblog} account with this handle or id.`)
      }
      return served(fetched, fetched.value)
    })
})
