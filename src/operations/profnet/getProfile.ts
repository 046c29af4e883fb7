import * as profnet from "../../contract/operations/profnet.ts"
import { parsePerson } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, notFound, sectionList, served } from "../support.ts"

export const getProfile = implement(profnet.getProfile, {
  *prepare(params, price) {
    const ref = yield* cleaned("identifier", (hosts) => parsePerson(params.identifier, hosts))
    const sections = yield* sectionList("sections", params.sections ?? [], profnet.profileSections)
    return { args: { ref, sections }, quote: price(sections.length) }
  },
  *run({ ref, sections }, context) {
    const fetched = yield* fetchVia(context.freshness, "getPerson", ref)
    const person = fetched.value
    if (person === undefined) {
      return yield* notFound(
        "No public profile with this identifier. Anonymous search results (is_anonymous=true) and private profiles cannot be fetched."
      )
    }
    const { about, experience, education, skills, ...overview } = person
    const all = { about, experience, education, skills }
    const data = { ...overview, ...Object.fromEntries(sections.map((section) => [section, all[section]])) }
    return served(fetched, data)
  }
})
