import { Effect, Schema } from "effect"
import { Person } from "../../contract/records.ts"
import { hosts, parsePerson } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { CommaList, cleaned, fetchVia, notFound, sectionList, served } from "../support.ts"

export const profileSections = ["about", "experience", "education", "skills"] as const
const { about, experience, education, skills, ...overviewFields } = Person.fields

export const PersonData = Schema.Struct({
  ...overviewFields,
  about: Schema.optionalKey(about),
  experience: Schema.optionalKey(experience),
  education: Schema.optionalKey(education),
  skills: Schema.optionalKey(skills)
})

export const getProfile = defineOperation({
  id: "getProfile",
  platform: "profnet",
  path: "/profnet/profiles",
  kind: "person",
  description: `One ${hosts.profnet} profile: the overview (name, headline, location, current position, follower counts) plus the sections you ask for. 4 credits including 2 sections; each further section +2 (at most 4). Identifier: profile URL, the slug after /in/, or urn:li:fsd_profile:<id>. It does not search by name (use searchPeople) and does not fetch companies (use getCompany). Search results with is_anonymous=true cannot be fetched.`,
  common: true,
  params: Schema.Struct({
    identifier: Schema.String.annotate({ description: "Profile URL, slug, or urn:li:fsd_profile:<id>." }),
    sections: Schema.optionalKey(CommaList(Schema.Literals(profileSections))).annotate({
      description:
        "Comma-separated: about, experience, education, skills each at most once (so at most 4); 2 included."
    })
  }),
  data: PersonData,
  prepare: (params) =>
    Effect.gen(function* () {
      const ref = yield* cleaned("identifier", parsePerson(params.identifier))
      const sections = yield* sectionList("sections", params.sections ?? [], profileSections)
      return { args: { ref, sections }, quote: prices.getProfile(sections.length) }
    }),
  run: ({ ref, sections }, context) =>
    Effect.gen(function* () {
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
    })
})
