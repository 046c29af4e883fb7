import { assert, describe, layer } from "@effect/vitest"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Ajv } from "ajv"
import { Effect } from "effect"
import { platforms } from "../../src/domain/plans.ts"
import { domainSurcharge, prices } from "../../src/domain/pricing.ts"
import { operations } from "../../src/operations/registry.ts"
import { signIn } from "../identity/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { sampleArguments } from "./samples.ts"
import { callTool, connect, type Mode, modes } from "./support.ts"

const freshIp = ipSequence("10.86")

/** The quote of each operation's cheapest call, from the pricing rules the calls are charged by. */
const cheapestQuotes = {
  resolveUrl: prices.resolveUrl().credits,
  getProfile: prices.getProfile(0).credits,
  searchPeople: prices.searchPeople(1).credits,
  getCompany: prices.getCompany(false).credits,
  getPosts: prices.getPosts(false).credits,
  forumSearch: prices.forumSearch().credits,
  getCommunity: prices.getCommunity(false).credits,
  getCommunityPosts: prices.getCommunityPosts().credits,
  getForumUser: prices.getForumUser(0).credits,
  getForumPosts: prices.getForumPosts(1, false).credits,
  resolveForumUrl: prices.resolveForumUrl().credits,
  microblogSearch: prices.microblogSearch().credits,
  getMicroblogProfile: prices.getMicroblogProfile().credits,
  getTweets: prices.getTweets().credits,
  getTweet: prices.getTweet().credits,
  getTweetReplies: prices.getTweetReplies().credits,
  resolveMicroblogUrl: prices.resolveMicroblogUrl().credits
}

/** What the catalogue may weigh, as sent: `/mcp` and each platform mount. */
const bound = { all: 32 * 1024, platform: 16 * 1024, management: 48 * 1024 }

/**
 * The bytes of the `tools/list` response body as the server sent it (JSON or one SSE event),
 * and the tools the client read from it.
 */
const measure = (url: string, auth: { readonly key: string; readonly ip: string }, mode: Mode) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const sizes: Array<number> = []
      const measuring = async (input: string | URL | Request, init?: RequestInit) => {
        const response = await fetch(input, init)
        const body = typeof init?.body === "string" ? init.body : ""
        if (!body.includes('"tools/list"')) return response
        const bytes = new Uint8Array(await response.arrayBuffer())
        sizes.push(bytes.byteLength)
        return new Response(bytes, { status: response.status, headers: response.headers })
      }
      const client = new Client({ name: "svc-catalogue-size", version: "1.0.0" }, mode.options)
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        fetch: measuring,
        requestInit: { headers: { authorization: `Bearer ${auth.key}`, "x-forwarded-for": auth.ip } }
      })
      return { client, transport, sizes }
    }),
    ({ client, transport, sizes }) =>
      Effect.promise(async () => {
        await client.connect(transport)
        const listed = await client.listTools()
        return { bytes: sizes.reduce((total, size) => total + size, 0), listed }
      }),
    ({ client }) => Effect.promise(() => client.close())
  )

describe(`The MCP catalogue's size (${storeName})`, () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    for (const mode of modes) {
      it.effect(`${mode.name}: a spend key's tools/list fits 32 KB on /mcp and 16 KB per platform`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const all = yield* measure(`${app.url}/mcp`, { key, ip }, mode)
          assert.strictEqual(all.listed.tools.length, operations.length + 1)
          console.info(`tools/list ${mode.era} /mcp: ${all.bytes} bytes`)
          assert.isAtMost(all.bytes, bound.all, "/mcp")
          for (const platform of platforms) {
            const one = yield* measure(`${app.url}/mcp/${platform}`, { key, ip }, mode)
            console.info(`tools/list ${mode.era} /mcp/${platform}: ${one.bytes} bytes`)
            assert.isAtMost(one.bytes, bound.platform, `/mcp/${platform}`)
          }
          if (mode.era === "modern") {
            const result = all.listed as unknown as { ttlMs?: number; cacheScope?: string }
            assert.strictEqual(result.cacheScope, "private")
            assert.isAbove(result.ttlMs ?? 0, 0)
          }
        })
      )

      it.effect(`${mode.name}: each data tool states its price: the base is its cheapest call's quote`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const { listed } = yield* measure(`${app.url}/mcp`, { key, ip }, mode)
          for (const operation of operations) {
            const tool = listed.tools.find((candidate) => candidate.name === operation.id)!
            const pricing = tool._meta?.["svc/pricing"] as
              | { base: number; rules: Array<{ item: string; credits: number; per?: number }> }
              | undefined
            assert.isDefined(pricing, operation.id)
            const cheapest = cheapestQuotes[operation.id as keyof typeof cheapestQuotes]
            assert.strictEqual(pricing!.base, cheapest, operation.id)
            const items = pricing!.rules.map((rule) => rule.item)
            assert.strictEqual(items.includes("realtime"), operation.common, operation.id)
          }
          const rulesOf = (id: string) =>
            (listed.tools.find((tool) => tool.name === id)!._meta as any)["svc/pricing"].rules
          assert.deepInclude(rulesOf("getProfile"), { item: "sections beyond 2", credits: 2 })
          assert.deepInclude(rulesOf("searchPeople"), { item: "results beyond 10", credits: 1, per: 10 })
          assert.deepInclude(rulesOf("getCompany"), { item: "domain resolution", credits: domainSurcharge })
          assert.deepInclude(rulesOf("getForumPosts"), { item: "thread", credits: 4 })
        })
      )

      it.effect(`${mode.name}: the shortened output schemas hold for real results`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const { listed } = yield* measure(`${app.url}/mcp`, { key, ip }, mode)
          const client = yield* connect(`${app.url}/mcp`, { key, ip }, mode)
          const ajv = new Ajv({ strict: false })
          let validated = 0
          for (const tool of listed.tools) {
            const args = tool.name === "get_usage" ? {} : sampleArguments[tool.name]
            assert.isDefined(args, tool.name)
            const result = yield* callTool(client, tool.name, args)
            assert.isFalse(result.isError, `${tool.name}: ${result.text}`)
            const validate = ajv.compile(tool.outputSchema as object)
            assert.isTrue(validate(result.structured), `${tool.name}: ${ajv.errorsText(validate.errors)}`)
            validated += 1
          }
          assert.strictEqual(validated, operations.length + 1)
        })
      )

      it.effect(`${mode.name}: a management token's catalogue, measured`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const minted = yield* app.mint(ip)
          const { management_token } = yield* signIn(app, `catalogue-${mode.era}@example.com`, {
            key: minted.key,
            ip
          })
          const all = yield* measure(`${app.url}/mcp`, { key: management_token, ip }, mode)
          console.info(`tools/list ${mode.era} /mcp (management token): ${all.bytes} bytes`)
          // The data tools and the management ones (measured 41 KB).
          assert.isAtMost(all.bytes, bound.management, "/mcp for a management token")
        })
      )
    }
  })
})
