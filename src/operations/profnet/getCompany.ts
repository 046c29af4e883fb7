import { Effect, Schema } from "effect"
import { Company } from "../../contract/records.ts"
import { hosts, parseCompany } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { cleaned } from "../support.ts"
import { lookupCompany } from "./company.ts"

export const getCompany = defineOperation({
  id: "getCompany",
  platform: "profnet",
  path: "/profnet/companies",
  kind: "company",
  description: `One ${hosts.profnet} company: name, description, industry, employee_count, headquarters, website, founding year, specialities, and its URN and numeric id (inputs for searchPeople's company filters only). 4 credits. Identifier: company URL, the slug after /company/, or a website domain; a domain is quoted 4 more (set max_credits accordingly) and that 4 is refunded when the domain was resolved before. An unverifiable domain gives INVALID_INPUT with the closest matches. Numeric ids and URNs are not fetchable; there is no search by name.`,
  common: true,
  params: Schema.Struct({
    identifier: Schema.String.annotate({ description: "Company URL, slug, or website domain." })
  }),
  data: Company,
  prepare: (params) =>
    Effect.map(cleaned("identifier", parseCompany(params.identifier)), (ref) => ({
      args: ref,
      quote: prices.getCompany("domain" in ref)
    })),
  run: (ref, context) =>
    Effect.map(lookupCompany(ref, context.freshness), (found) => ({
      data: found.company,
      refunds: found.refunds,
      served: found.served,
      fetchedAt: found.fetchedAt
    }))
})
