import { assert, describe, it } from "vitest"
import { declarations } from "../../src/contract/operations/index.ts"
import { defaultHosts } from "../../src/domain/identifiers/hosts.ts"

/**
 * The operation ids are the contract's and differ by platform in ways a model confuses on `/mcp`
 * (`getPosts`, `getForumPosts`, `getCommunityPosts`): each description says in its first words
 * which platform it reads and then what it returns.
 */
describe("operation descriptions", () => {
  const kinds = { profnet: "professional network", forum: "forum", microblog: "microblog" } as const
  it("start with the platform's host and kind, then what the operation returns", () => {
    for (const operation of declarations) {
      const lead = `${defaultHosts[operation.platform]} (${kinds[operation.platform]}): `
      assert.isTrue(
        operation.description.startsWith(lead),
        `${operation.id}: ${operation.description.slice(0, 80)}`
      )
      assert.match(operation.description.slice(lead.length), /^[a-z]/, operation.id)
    }
  })
  it("tell apart the operations a model confuses", () => {
    const of = (id: string) =>
      declarations.find((operation) => operation.id === id)!.description.slice(0, 160)
    assert.match(
      of("getPosts"),
      /^profnet\.com \(professional network\): one page .* of a person's or company's posts/
    )
    assert.match(of("getForumPosts"), /^forum\.com \(forum\): posts in full/)
    assert.match(of("getCommunityPosts"), /^forum\.com \(forum\): one page .* of a community's feed/)
  })
})
