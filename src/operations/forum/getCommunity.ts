import { Effect, Schema } from "effect"
import { Community } from "../../contract/records.ts"
import { hosts, parseCommunity } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const CommunityName = Schema.String.annotate({
  description: `Community name without the prefix (e.g. "python"), c/<name>, or a ${hosts.forum}/c/<name> URL.`
})

export const getCommunity = defineOperation({
  id: "getCommunity",
  platform: "forum",
  path: "/forum/communities",
  kind: "community",
  description: `One ${hosts.forum} community's details: title, description, subscribers, active_users, age (created_at), NSFW flag and topics. 4 credits; include_settings=true adds the rules and the moderator list for +2. It returns no posts: read the feed with getCommunityPosts, search inside it with forumSearch. community_name: the name without the prefix, or a community URL (tracking parameters, www/m hosts and trailing slashes are cleaned). Find communities by topic with forumSearch type=communities.`,
  common: true,
  params: Schema.Struct({
    community_name: CommunityName,
    include_settings: Schema.optionalKey(Schema.Boolean).annotate({
      description: "true adds the rules and moderators (+2 credits). Default false."
    })
  }),
  data: Community,
  prepare: (params) =>
    Effect.map(cleaned("community_name", parseCommunity(params.community_name)), (name) => {
      const includeSettings = params.include_settings ?? false
      return { args: { name, includeSettings }, quote: prices.getCommunity(includeSettings) }
    }),
  run: ({ name, includeSettings }, context) =>
    Effect.gen(function* () {
      const fetched = yield* fetchVia(context.freshness, "getCommunity", name, includeSettings)
      if (fetched.value === undefined) {
        return yield* notFound(
          `No community "${name}". Check the name after /c/ in its URL, or find it with forumSearch type=communities.`
        )
      }
      return served(fetched, fetched.value)
    })
})
