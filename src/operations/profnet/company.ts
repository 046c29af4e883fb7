import { Effect } from "effect"
import { InvalidInput } from "../../contract/errors.ts"
import type { Company } from "../../contract/records.ts"
import type { CompanyId } from "../../domain/identifiers/index.ts"
import { domainSurcharge, type Refund } from "../../domain/pricing.ts"
import { Domains } from "../../services/Domains.ts"
import type { Freshness, Served } from "../Operation.ts"
import { fetchVia, notFound } from "../support.ts"

export interface CompanyLookup {
  readonly company: Company
  readonly refunds: ReadonlyArray<Refund>
  readonly served: Served
  readonly fetchedAt: number
}

/**
 * A company by slug or website domain. A domain is verified against the company's website on
 * first use and remembered; a domain resolved before is refunded its surcharge.
 */
export const lookupCompany = Effect.fnUntraced(function* (ref: CompanyId, freshness: Freshness) {
  if ("slug" in ref) {
    const fetched = yield* fetchVia(freshness, "getCompany", ref)
    if (fetched.value === undefined) {
      return yield* notFound(
        `No company with the slug "${ref.slug}". Check the slug after /company/ in its URL.`
      )
    }
    return { company: fetched.value, refunds: [], served: fetched.served, fetchedAt: fetched.fetchedAt }
  }
  const domains = yield* Domains
  const knownSlug = yield* domains.known(ref.domain)
  const fetched = yield* fetchVia(
    freshness,
    "getCompany",
    knownSlug === undefined ? ref : { slug: knownSlug }
  )
  const company = fetched.value
  if (company === undefined || company.domain !== ref.domain) {
    const closest = yield* fetchVia("recent", "closestDomains", ref.domain, 5)
    return yield* new InvalidInput({
      message: `No company's website could be verified for "${ref.domain}". Closest known domains: ${closest.value.join(", ") || "none"}. Send one of them, the company URL or its slug.`,
      param: "identifier",
      closest_matches: closest.value
    })
  }
  if (knownSlug === undefined) yield* domains.remember(ref.domain, company.slug)
  const refunds: ReadonlyArray<Refund> =
    knownSlug === undefined ? [] : [{ reason: "domain_resolved_before", credits: domainSurcharge }]
  return { company, refunds, served: fetched.served, fetchedAt: fetched.fetchedAt }
})
