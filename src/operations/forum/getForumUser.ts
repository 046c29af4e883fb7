import { PlatformHosts } from "../../config.ts"
import * as forum from "../../contract/operations/forum.ts"
import { ForumUserSection } from "../../contract/records.ts"
import { parseForumUser } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, notFound, sectionList, served } from "../support.ts"

export const getForumUser = implement(forum.getForumUser, {
  *prepare(params, price) {
    const username = yield* cleaned("username", (hosts) => parseForumUser(params.username, hosts))
    const sections = yield* sectionList("sections", params.sections ?? [], ForumUserSection.literals)
    return { args: { username, sections }, quote: price(sections.length) }
  },
  *run({ username, sections }, context) {
    const hosts = yield* PlatformHosts
    const fetched = yield* fetchVia(context.freshness, "getForumUser", username, sections)
    if (fetched.value === undefined) {
      return yield* notFound(
        `No ${hosts.forum} user "${username}". Check the name after /user/ in their URL.`
      )
    }
    return served(fetched, fetched.value)
  }
})
