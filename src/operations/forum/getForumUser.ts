import { Effect, Schema } from "effect"
import { ForumUser, ForumUserSection } from "../../contract/records.ts"
import { hosts, parseForumUser } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { CommaList, cleaned, fetchVia, notFound, sectionList, served } from "../support.ts"

export const getForumUser = defineOperation({
  id: "getForumUser",
  platform: "forum",
  path: "/forum/users",
  kind: "forum_user",
  description: `One ${hosts.forum} user: id, username, karma (post and comment), account age and profile URL, plus the sections you ask for: posts (their recent post summaries) and comments (their recent comments). 4 credits, +2 per section (at most 2: 8 with both). username: the name with or without u/, or a profile URL (${hosts.forum}/user/<name>). Find users by keywords with forumSearch type=users.`,
  common: true,
  params: Schema.Struct({
    username: Schema.String.annotate({
      description: `Username (without u/) or a ${hosts.forum}/user/<name> URL.`
    }),
    sections: Schema.optionalKey(CommaList(ForumUserSection)).annotate({
      description: "Comma-separated: posts, comments, each at most once (+2 credits each)."
    })
  }),
  data: ForumUser,
  prepare: (params) =>
    Effect.gen(function* () {
      const username = yield* cleaned("username", parseForumUser(params.username))
      const sections = yield* sectionList("sections", params.sections ?? [], ForumUserSection.literals)
      return { args: { username, sections }, quote: prices.getForumUser(sections.length) }
    }),
  run: ({ username, sections }, context) =>
    Effect.gen(function* () {
      const fetched = yield* fetchVia(context.freshness, "getForumUser", username, sections)
      if (fetched.value === undefined) {
        return yield* notFound(
          `No ${hosts.forum} user "${username}". Check the name after /user/ in their URL.`
        )
      }
      return served(fetched, fetched.value)
    })
})
