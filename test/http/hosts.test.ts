import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Exit } from "effect"
import { AppConfig } from "../../src/config.ts"
import { defaultHosts, type Hosts } from "../../src/domain/identifiers/index.ts"
import { operations } from "../../src/operations/registry.ts"
import type { Page } from "../../src/upstream/contract.ts"
import { makeWorld } from "../../src/upstream/world/index.ts"
import { callTool, connect, modes } from "../mcp/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp, testSeed } from "../support/app.ts"
import { storeName } from "../support/database.ts"

const hosts: Hosts = { profnet: "pro.example", forum: "board.example.org", microblog: "chirp.test" }

const fromEnv = (env: Record<string, string>) =>
  AppConfig.fromEnv.pipe(
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))
  )

describe("hosts configuration", () => {
  it.effect(
    "profnet.com, forum.com and microblog.com are the defaults; PROFNET_HOST, FORUM_HOST and MICROBLOG_HOST set them",
    () =>
      Effect.gen(function* () {
        assert.deepStrictEqual((yield* fromEnv({})).hosts, defaultHosts)
        const configured = yield* fromEnv({
          PROFNET_HOST: hosts.profnet,
          FORUM_HOST: hosts.forum,
          MICROBLOG_HOST: hosts.microblog
        })
        assert.deepStrictEqual(configured.hosts, hosts)
        assert.deepStrictEqual((yield* fromEnv({ FORUM_HOST: "board.test" })).hosts, {
          ...defaultHosts,
          forum: "board.test"
        })
      })
  )

  it.effect("a host that is not a bare lower-case host name, or one used twice, stops the start-up", () =>
    Effect.gen(function* () {
      for (const bad of [
        "https://pro.example",
        "Pro.example",
        "pro.example/",
        "pro.example:8080",
        "www.pro.example"
      ]) {
        const exit = yield* Effect.exit(fromEnv({ PROFNET_HOST: bad }))
        assert.isTrue(Exit.isFailure(exit), bad)
        assert.include(String(exit), "PROFNET_HOST", bad)
        assert.include(String(exit), "bare lower-case host name", bad)
      }
      const twice = yield* Effect.exit(fromEnv({ MICROBLOG_HOST: "forum.com" }))
      assert.isTrue(Exit.isFailure(twice))
      assert.include(String(twice), "three different hosts")
    })
  )
})

const world = makeWorld(testSeed, hosts)
const page = <A>(p: Page<A> | "invalid_cursor" | undefined): Page<A> => {
  if (p === undefined || p === "invalid_cursor") throw new Error(`expected a page, got ${String(p)}`)
  return p
}
const person = world.getPerson({
  slug: page(world.searchPeople({ keywords: "engineer" }, undefined, 10)).items.find((r) => !r.is_anonymous)!
    .public_identifier!
})!
const permalink = (() => {
  const hit = page(world.forumSearch({ query: "python" }, undefined)).items[0]!
  if (hit.kind !== "post") throw new Error("expected a post")
  return hit.permalink
})()
const freshIp = ipSequence("10.61")
const q = encodeURIComponent
const defaultHostNames = new RegExp(Object.values(defaultHosts).join("|").replaceAll(".", "\\."))

describe(`a service on other hosts (${storeName})`, () => {
  layer(testApp(operations, { hosts }), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "URLs of the world on the configured hosts resolve; the default hosts are refused naming them",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const get = (path: string) => app.call(path, { key, ip })

          assert.strictEqual(person.profile_url, `https://${hosts.profnet}/in/${person.public_identifier}`)
          const resolved = yield* get(
            `/v1/profnet/resolve-url?url=${q(`www.${hosts.profnet}/in/${person.public_identifier}/?trk=x`)}`
          )
          assert.strictEqual(resolved.status, 200)
          assert.deepStrictEqual(resolved.body.data, {
            type: "person",
            id: person.urn,
            handle: person.public_identifier,
            canonical_url: person.profile_url
          })
          const profile = yield* get(`/v1/profnet/profiles?identifier=${q(person.profile_url)}`)
          assert.strictEqual(profile.status, 200)
          assert.strictEqual(profile.body.data.profile_url, person.profile_url)
          const posts = yield* get(`/v1/forum/posts?ids=${q(permalink)}`)
          assert.strictEqual(posts.status, 200)
          assert.strictEqual(posts.body.data.posts[0].permalink, permalink)

          const onDefault = yield* get(
            `/v1/profnet/resolve-url?url=${q(`https://profnet.com/in/${person.public_identifier}`)}`
          )
          assert.strictEqual(onDefault.status, 400)
          assert.strictEqual(onDefault.body.code, "INVALID_INPUT")
          assert.strictEqual(onDefault.body.param, "url")
          assert.include(onDefault.body.message, `Not a ${hosts.profnet} URL`)
          const forumDefault = yield* get(
            `/v1/forum/posts?ids=${q(permalink.replace(hosts.forum, defaultHosts.forum))}`
          )
          assert.strictEqual(forumDefault.status, 400)
          assert.include(forumDefault.body.message, hosts.forum)
          const missing = yield* get("/v1/microblog/tweet?id=1")
          assert.strictEqual(missing.status, 404)
          assert.strictEqual(missing.body.code, "NOT_FOUND")
          assert.include(missing.body.message, `No ${hosts.microblog} tweet`)
        })
    )

    it.effect("OpenAPI, the docs page and MCP tools describe the configured hosts", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const openapi = yield* app.call("/v1/openapi.json")
        assert.strictEqual(openapi.status, 200)
        const document = JSON.stringify(openapi.body)
        for (const host of Object.values(hosts)) assert.include(document, host)
        assert.notMatch(document, defaultHostNames)
        assert.include(
          openapi.body.paths["/v1/forum/resolve-url"].get.description,
          `${hosts.forum} (forum): what a URL`
        )
        const docs = yield* app.call("/docs")
        assert.include(String(docs.body), hosts.microblog)

        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const client = yield* connect(`${app.url}/mcp`, { key, ip }, modes[0])
        const { tools } = yield* Effect.promise(() => client.listTools())
        const resolveUrl = tools.find((tool) => tool.name === "resolveUrl")!
        assert.include(resolveUrl.description, `${hosts.profnet} (professional network): what a URL`)
        assert.include(JSON.stringify(resolveUrl.inputSchema), `A ${hosts.profnet} profile`)
        assert.notMatch(JSON.stringify(tools), defaultHostNames)
        // A tool call cleans its identifiers against the configured hosts too.
        const refused = yield* callTool(client, "resolveUrl", { url: "https://profnet.com/in/someone" })
        assert.isTrue(refused.isError)
        assert.include(refused.problem.message, `Not a ${hosts.profnet} URL`)
        const found = yield* callTool(client, "resolveUrl", { url: person.profile_url })
        assert.isFalse(found.isError)
        assert.strictEqual(found.structured.data.canonical_url, person.profile_url)
      })
    )
  })
})
