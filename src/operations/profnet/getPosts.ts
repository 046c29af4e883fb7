import { Effect, Schema } from "effect"
import { ProfnetPost, pageData } from "../../contract/records.ts"
import { hosts, parsePostsOwner } from "../../domain/identifiers.ts"
import { prices } from "../../domain/pricing.ts"
import { defineOperation } from "../Operation.ts"
import { cleaned, fetchVia, pageResult } from "../support.ts"
import { lookupCompany } from "./company.ts"

export const PostsData = pageData("posts", ProfnetPost)

export const getPosts = defineOperation({
  id: "getPosts",
  platform: "profnet",
  path: "/profnet/posts",
  kind: "posts",
  description: `One page (up to 10, newest first) of a ${hosts.profnet} person's or company's posts, with a cursor for older ones. 4 credits per page; a website-domain identifier is quoted 4 more, refunded when the domain was resolved before. Identifier: person or company URL, slug (the type is detected), person URN, or company domain. Company URNs and numeric ids are not accepted. There is no keyword search across posts and no reading one post by URL.`,
  common: true,
  params: Schema.Struct({
    identifier: Schema.String.annotate({
      description: "Person/company URL, slug, person URN, or company domain."
    }),
    cursor: Schema.optionalKey(Schema.String).annotate({
      description: "From a previous page, for older posts."
    })
  }),
  data: PostsData,
  prepare: (params) =>
    Effect.map(cleaned("identifier", parsePostsOwner(params.identifier)), (owner) => ({
      args: { owner, cursor: params.cursor },
      quote: prices.getPosts(owner.kind === "company" && "domain" in owner.ref),
      continuation: params.cursor !== undefined
    })),
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
