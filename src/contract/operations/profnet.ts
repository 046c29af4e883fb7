import { Schema } from "effect"
import { defaultHosts } from "../../domain/identifiers/index.ts"
import { prices } from "../../domain/pricing.ts"
import { declareOperation } from "../declaration.ts"
import { CommaList, cursorParam } from "../parameters.ts"
import {
  Company,
  PeopleSearchResult,
  Person,
  ProfnetPost,
  ProfnetUrlResolution,
  pageData
} from "../records.ts"

export const resolveUrl = declareOperation({
  id: "resolveUrl",
  summary: "Resolve a profnet URL",
  description: `${defaultHosts.profnet} (professional network): what a URL points at (person, company or post), before fetching. 2 credits. Tracking parameters, www/m hosts and trailing slashes are tolerated. Use the returned handle or id with getProfile/getPosts for people, and the handle (not the id) with getCompany/getPosts for companies. Skip it when a slug, URN or clean URL is already known.`,
  platform: "profnet",
  path: "/profnet/resolve-url",
  kind: "url_resolution",
  common: false,
  params: Schema.Struct({
    url: Schema.String.annotate({ description: `A ${defaultHosts.profnet} profile, company or post URL.` })
  }),
  examples: { url: `https://www.${defaultHosts.profnet}/in/richard-lewis-07kvcfn/` },
  data: ProfnetUrlResolution,
  price: { rule: prices.resolveUrl, summary: "2 credits." }
})

export const profileSections = ["about", "experience", "education", "skills"] as const
const { about, experience, education, skills, ...overviewFields } = Person.fields

/** A profile: the overview, and each section only when asked for. */
export const PersonData = Schema.Struct({
  ...overviewFields,
  about: Schema.optionalKey(about),
  experience: Schema.optionalKey(experience),
  education: Schema.optionalKey(education),
  skills: Schema.optionalKey(skills)
})

export const getProfile = declareOperation({
  id: "getProfile",
  summary: "Get a profnet profile",
  description: `${defaultHosts.profnet} (professional network): one person's profile, the overview (name, headline, location, current position, follower counts) plus the sections you ask for. 4 credits including 2 sections; each further section +2 (at most 4). Identifier: profile URL, the slug after /in/, or \`urn:li:fsd_profile:<id>\`. It does not search by name (use searchPeople) and does not fetch companies (use getCompany). Search results with is_anonymous=true cannot be fetched.`,
  platform: "profnet",
  path: "/profnet/profiles",
  kind: "person",
  common: true,
  params: Schema.Struct({
    identifier: Schema.String.annotate({ description: "Profile URL, slug, or `urn:li:fsd_profile:<id>`." }),
    sections: Schema.optionalKey(CommaList(Schema.Literals(profileSections))).annotate({
      description:
        "Comma-separated: about, experience, education, skills each at most once (so at most 4); 2 included."
    })
  }),
  examples: { identifier: "richard-lewis-07kvcfn", sections: ["about", "experience", "skills"] },
  data: PersonData,
  price: { rule: prices.getProfile, summary: "4 credits including 2 sections; +2 per further section." }
})

const text = (description: string) =>
  Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200))).annotate({ description })

export const PeopleSearchData = Schema.Struct({
  results: Schema.Array(PeopleSearchResult),
  cursor: Schema.NullOr(Schema.String),
  total_matches: Schema.Int
})

export const searchPeople = declareOperation({
  id: "searchPeople",
  summary: "Search profnet people",
  description: `${defaultHosts.profnet} (professional network): people matching keywords (name, title or both) and filters. 10 credits including the first 10 results; each further 10 add 1 (limit 1-30, default 10; trial keys at most 10); settled by the results returned. A school or company filter needs keywords (derived from first_name/last_name/title when omitted). current_company/past_company take a name, slug, numeric id or company URN; a past_company name or a company URL cannot combine with limit=30 (use 20 or the numeric id). Results with is_anonymous=true cannot be fetched with getProfile. Page with cursor: each page is a new call priced by its own limit.`,
  platform: "profnet",
  path: "/profnet/search",
  kind: "people_search",
  common: true,
  params: Schema.Struct({
    keywords: text("Free text: name, title or both."),
    first_name: text("Exact first name."),
    last_name: text("Exact last name."),
    title: text("Current job title."),
    school: text("School or university name."),
    current_company: text("Company name, slug, numeric id or company URN."),
    past_company: text("Company name, slug, numeric id or company URN."),
    limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 30 }))).annotate({
      description: "Results per page, 1 to 30 (default 10; trial keys at most 10)."
    }),
    cursor: cursorParam()
  }),
  examples: { keywords: "site reliability engineer", limit: 10 },
  data: PeopleSearchData,
  price: {
    rule: prices.searchPeople,
    summary: "10 credits including 10 results, +1 per further 10 of limit; settled by the results returned."
  }
})

export const getCompany = declareOperation({
  id: "getCompany",
  summary: "Get a profnet company",
  description: `${defaultHosts.profnet} (professional network): one company, its name, description, industry, employee_count, headquarters, website, founding year, specialities, and its URN and numeric id (inputs for searchPeople's company filters only). 4 credits. Identifier: company URL, the slug after /company/, or a website domain; a domain is quoted 4 more (set max_credits accordingly) and that 4 is refunded when the domain was resolved before. An unverifiable domain gives INVALID_INPUT with the closest matches. Numeric ids and URNs are not fetchable; there is no search by name.`,
  platform: "profnet",
  path: "/profnet/companies",
  kind: "company",
  common: true,
  params: Schema.Struct({
    identifier: Schema.String.annotate({ description: "Company URL, slug, or website domain." })
  }),
  examples: { identifier: "mosaiclaw.com" },
  data: Company,
  price: {
    rule: prices.getCompany,
    summary: "4 credits; a website domain +4, refunded when the domain was resolved before."
  }
})

export const PostsData = pageData("posts", ProfnetPost)

export const getPosts = declareOperation({
  id: "getPosts",
  summary: "List profnet posts",
  description: `${defaultHosts.profnet} (professional network): one page (up to 10, newest first) of a person's or company's posts, with a cursor for older ones. 4 credits per page; a website-domain identifier is quoted 4 more, refunded when the domain was resolved before. Identifier: person or company URL, slug (the type is detected), person URN, or company domain. Company URNs and numeric ids are not accepted. There is no keyword search across posts and no reading one post by URL.`,
  platform: "profnet",
  path: "/profnet/posts",
  kind: "posts",
  common: true,
  params: Schema.Struct({
    identifier: Schema.String.annotate({
      description: "Person/company URL, slug, person URN, or company domain."
    }),
    cursor: cursorParam("From a previous page, for older posts.")
  }),
  examples: { identifier: "mosaic-law" },
  data: PostsData,
  price: {
    rule: prices.getPosts,
    summary: "4 credits per page; a website domain +4, refunded when the domain was resolved before."
  }
})
