import { Effect } from "effect"
import * as profnet from "../../contract/operations/profnet.ts"
import { type PostsOwner, parsePostsOwner } from "../../domain/identifiers/index.ts"
import { type Freshness, implement } from "../Operation.ts"
import { cleaned, fetchVia, pageResult } from "../support.ts"
import { lookupCompany } from "./company.ts"

export const getPosts = implement(profnet.getPosts, {
  *prepare(params, price) {
    const owner = yield* cleaned("identifier", (hosts) => parsePostsOwner(params.identifier, hosts))
    return {
      args: { owner, cursor: params.cursor },
      quote: price(owner.kind === "company" && "domain" in owner.ref),
      continuation: params.cursor !== undefined
    }
  },
  *run({ owner, cursor }, context) {
    const { fetched, refunds } = yield* postsOf(owner, cursor, context.freshness)
    return yield* pageResult(fetched, "posts", "No person or company with this identifier.", refunds)
  }
})

/** The owner's posts page, and the refunds of the company lookup a domain took. */
const postsOf = Effect.fnUntraced(function* (
  owner: PostsOwner,
  cursor: string | undefined,
  freshness: Freshness
) {
  const byPerson = (slugOrUrn: string) => fetchVia(freshness, "getPersonPosts", slugOrUrn, cursor)
  const byCompany = (slug: string) => fetchVia(freshness, "getCompanyPosts", slug, cursor)
  switch (owner.kind) {
    case "person":
      return {
        fetched: yield* byPerson("slug" in owner.ref ? owner.ref.slug : owner.ref.urn),
        refunds: []
      }
    case "company": {
      if ("slug" in owner.ref) return { fetched: yield* byCompany(owner.ref.slug), refunds: [] }
      const found = yield* lookupCompany(owner.ref, freshness)
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
