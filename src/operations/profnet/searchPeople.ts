import { PlatformHosts } from "../../config.ts"
import * as profnet from "../../contract/operations/profnet.ts"
import type { Hosts } from "../../domain/identifiers/index.ts"
import { searchFewerResultsRefund } from "../../domain/pricing.ts"
import { InvalidCursor } from "../../upstream/contract.ts"
import { implement } from "../Operation.ts"
import { fetchVia, invalid, invalidCursor } from "../support.ts"

/** Names and company URLs cost the search one of its 3 internal fetches; ids and URNs filter exactly. */
const spendsAFetch = (hosts: Hosts, filter: string | undefined, nameCounts: boolean) =>
  filter !== undefined &&
  (filter.includes(`${hosts.profnet}/company/`) ||
    (nameCounts && !/^\d+$/.test(filter) && !filter.startsWith("urn:li:fsd_company:")))

export const searchPeople = implement(profnet.searchPeople, {
  *prepare(params, price) {
    const hosts = yield* PlatformHosts
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
      (spendsAFetch(hosts, params.past_company, true) || spendsAFetch(hosts, params.current_company, false))
    ) {
      return yield* invalid(
        "limit",
        "A past_company name or a company-URL filter spends one of the search's 3 internal fetches, so it cannot combine with limit=30. Use limit=20 or less, or pass the company's numeric id."
      )
    }
    const { limit: _limit, cursor, keywords: _keywords, ...filters } = params
    return {
      args: { query: { ...filters, keywords }, limit, cursor },
      quote: price(limit),
      searchLimit: limit,
      continuation: cursor !== undefined
    }
  },
  *run({ query, limit, cursor }, context) {
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
  }
})
