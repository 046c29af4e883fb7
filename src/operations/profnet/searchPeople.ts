import { Effect, Schema } from "effect"
import { PeopleSearchResult } from "../../contract/records.ts"
import { hosts } from "../../domain/identifiers.ts"
import { prices, searchFewerResultsRefund } from "../../domain/pricing.ts"
import { InvalidCursor } from "../../upstream/world/index.ts"
import { defineOperation } from "../Operation.ts"
import { fetchVia, invalid, invalidCursor } from "../support.ts"

const text = (description: string) =>
  Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200))).annotate({ description })

export const PeopleSearchData = Schema.Struct({
  results: Schema.Array(PeopleSearchResult),
  cursor: Schema.NullOr(Schema.String),
  total_matches: Schema.Int
})

/** Names and company URLs cost the search one of its 3 internal fetches; ids and URNs filter exactly. */
const spendsAFetch = (filter: string | undefined, nameCounts: boolean) =>
  filter !== undefined &&
  (filter.includes(`${hosts.profnet}/company/`) ||
    (nameCounts && !/^\d+$/.test(filter) && !filter.startsWith("urn:li:fsd_company:")))

export const searchPeople = defineOperation({
  id: "searchPeople",
  platform: "profnet",
  path: "/profnet/search",
  kind: "people_search",
  description: `Search ${hosts.profnet} people by keywords (name, title or both) and filters. 10 credits including the first 10 results; each further 10 add 1 (limit 1-30, default 10; trial keys at most 10); settled by the results returned. A school or company filter needs keywords (derived from first_name/last_name/title when omitted). current_company/past_company take a name, slug, numeric id or company URN; a past_company name or a company URL cannot combine with limit=30 (use 20 or the numeric id). Results with is_anonymous=true cannot be fetched with getProfile. Page with cursor: each page is a new call priced by its own limit.`,
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
    cursor: Schema.optionalKey(Schema.String).annotate({ description: "From a previous page." })
  }),
  data: PeopleSearchData,
  prepare: (params) =>
    Effect.gen(function* () {
      const limit = params.limit ?? 10
      const derived = [params.first_name, params.last_name, params.title]
        .filter((part) => part !== undefined)
        .join(" ")
      const keywords = params.keywords?.trim() || derived.trim() || undefined
      const hasFilter = [params.school, params.current_company, params.past_company].some(
        (f) => f !== undefined
      )
      if (keywords === undefined) {
        return yield* invalid(
          "keywords",
          hasFilter
            ? "A school or company filter needs keywords (or first_name, last_name or title to derive them from)."
            : "Send keywords, or a first_name, last_name or title filter."
        )
      }
      if (
        limit === 30 &&
        (spendsAFetch(params.past_company, true) || spendsAFetch(params.current_company, false))
      ) {
        return yield* invalid(
          "limit",
          "A past_company name or a company-URL filter spends one of the search's 3 internal fetches, so it cannot combine with limit=30. Use limit=20 or less, or pass the company's numeric id."
        )
      }
      const { limit: _limit, cursor, keywords: _keywords, ...filters } = params
      return {
        args: { query: { ...filters, keywords }, limit, cursor },
        quote: prices.searchPeople(limit),
        searchLimit: limit,
        continuation: cursor !== undefined
      }
    }),
  run: ({ query, limit, cursor }, context) =>
    Effect.gen(function* () {
      const fetched = yield* fetchVia(context.freshness, "searchPeople", query, cursor, limit)
      const page = fetched.value
      if (page === InvalidCursor) return yield* invalidCursor
      const refund = searchFewerResultsRefund(limit, page.items.length)
      return {
        data: {
          results: page.items,
          cursor: page.next_cursor,
          total_matches: page.total_matches ?? page.items.length
        },
        refunds: refund > 0 ? [{ reason: "fewer_results" as const, credits: refund }] : [],
        served: fetched.served,
        fetchedAt: fetched.fetchedAt
      }
    })
})
