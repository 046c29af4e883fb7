import { Effect } from "effect"
import * as profnet from "../../contract/operations/profnet.ts"
import { parsePostsOwner } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, pageResult } from "../support.ts"
import { lookupCompany } from "./company.ts"

export const getPosts = implement(profnet.getPosts, {
  prepare: (params, price) =>
    Effect.map(
      cleaned("identifier", (hosts) => parsePostsOwner(params.identifier, hosts)),
      (owner) => ({
        args: { owner, cursor: params.cursor },
        quote: price(owner.kind === "company" && "domain" in owner.ref),
        continuation: params.cursor !== undefined
      })
    ),
  run: ({ owner, cursor }, context) =>
    Effect.gen(function* () {
      const byPerson = (slugOrUrn: string) => fetchVia(context.freshness, "getPersonPosts", slugOrUrn, cursor)
      const byCompany = (slug: string) => fetchVia(context.freshness, "getCompanyPosts", slug, cursor)
      const { fetched, refunds } = yield* Effect.gen(function* () {
        switch (owner.kind) {
          case "person":
            return {
              fetched: yield* byPerson("slug" in owner.ref ? owner.ref.slug : owner.ref.urn),
              refunds: []
            }
          case "company": {
            if ("slug" in owner.ref) return { fetched: yield* byCompany(owner.ref.slug), refunds: [] }
            const found = yield* lookupCompany(owner.ref, context.freshness)
            return { fetched: yield* byCompany(found.company.slug), refunds: found.refunds }
          }
          case "either": {
            // A bare slug may name a person or a company: people first.
            const asPerson = yield* byPerson(owner.slug)
            return {
              fetched: asPerson.value === undefined ? yield* byCompany(owner.slug) : asPerson,
              refunds: []
            }
          }
        }
      })
      return yield* pageResult(fetched, "posts", "No person or company with this identifier.", refunds)
    })
})
