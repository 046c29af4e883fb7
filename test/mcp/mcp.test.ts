import { assert, describe, layer } from "@effect/vitest"
import { extractWWWAuthenticateParams } from "@modelcontextprotocol/client"
import { Effect, SchemaAST } from "effect"
import { platforms } from "../../src/domain/plans.ts"
import type { AnyOperation } from "../../src/operations/Operation.ts"
import { operations } from "../../src/operations/registry.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { UpstreamFaults } from "../../src/upstream/Upstream.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { person, sampleArguments } from "./samples.ts"
import { callTool, connect, initializeBody, jsonRpcHeaders, type Mode, modes, rawRequest } from "./support.ts"

const freshIp = ipSequence("10.50")
const uuid = () => crypto.randomUUID()
/** BASE_URL of the test configuration. */
const baseUrl = "http://svc.test"

const trialClient = (mode: Mode, path = "/mcp") =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const ip = freshIp()
    const minted = yield* app.mint(ip)
    const client = yield* connect(`${app.url}${path}`, { key: minted.key, ip }, mode)
    return { ...minted, ip, client }
  })

/** A key of a flex account with purchased credits. */
const paidClient = (mode: Mode, credits: number) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const admin = yield* Admin
    const ip = freshIp()
    const minted = yield* app.mint(ip)
    yield* Effect.orDie(admin.setPlan(minted.account_id, "flex"))
    yield* Effect.orDie(admin.credit(minted.account_id, credits, "balance", "test purchase"))
    const client = yield* connect(`${app.url}/mcp`, { key: minted.key, ip }, mode)
    return { ...minted, ip, client }
  })

const expectedInput = (operation: AnyOperation) => {
  const own = Object.entries(operation.params.fields) as Array<[string, { ast: SchemaAST.AST }]>
  return {
    properties: [
      ...own.map(([name]) => name),
      ...(operation.common ? ["freshness", "max_credits"] : []),
      "idempotency_key"
    ].sort(),
    required: own
      .filter(([, field]) => !SchemaAST.isOptional(field.ast))
      .map(([name]) => name)
      .sort()
  }
}

const mcpPost = (path: string, options: { key?: string; headers?: Record<string, string>; body?: string }) =>
  Effect.flatMap(TestApp, (app) =>
    app.call(path, {
      method: "POST",
      ...(options.key === undefined ? {} : { key: options.key }),
      headers: { ...jsonRpcHeaders, ...options.headers },
      body: options.body ?? initializeBody
    })
  )

describe(`MCP (${storeName})`, () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    for (const mode of modes) {
      it.effect(`${mode.name}: /mcp lists every registry operation and get_usage, schemas derived`, () =>
        Effect.gen(function* () {
          const { client } = yield* trialClient(mode)
          const version = client.getNegotiatedProtocolVersion() ?? ""
          if (mode.era === "modern") assert.strictEqual(version, "2026-07-28")
          else assert.match(version, /^2025-/)
          const { tools } = yield* Effect.promise(() => client.listTools())
          assert.deepStrictEqual(
            tools.map((tool) => tool.name),
            // A spend key's catalogue is data-only (a trial key never delegates).
            [...operations.map((operation) => operation.id), "get_usage"]
          )
          for (const operation of operations) {
            const tool = tools.find((candidate) => candidate.name === operation.id)!
            const input = tool.inputSchema as { properties: object; required?: Array<string> }
            const expected = expectedInput(operation)
            assert.strictEqual(tool.description, operation.description)
            assert.deepStrictEqual(Object.keys(input.properties).sort(), expected.properties, operation.id)
            assert.deepStrictEqual([...(input.required ?? [])].sort(), expected.required, operation.id)
            const output = tool.outputSchema as any
            assert.deepStrictEqual(output.properties.kind.enum, [operation.kind])
            assert.includeMembers(output.required, ["schema_version", "data", "cost", "receipt"])
          }
          const usage = tools.find((tool) => tool.name === "get_usage")!
          assert.includeMembers((usage.outputSchema as any).required, ["plan", "today", "upgrade_url"])
        })
      )

      it.effect(`${mode.name}: each platform mount lists that platform's tools and get_usage`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          for (const platform of platforms) {
            const client = yield* connect(`${app.url}/mcp/${platform}`, { key, ip }, mode)
            const { tools } = yield* Effect.promise(() => client.listTools())
            assert.deepStrictEqual(
              tools.map((tool) => tool.name),
              [...operations.filter((o) => o.platform === platform).map((o) => o.id), "get_usage"]
            )
          }
        })
      )

      it.effect(`${mode.name}: every tool answers with its envelope, get_usage with REST's usage`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const { client, key, ip } = yield* trialClient(mode)
          for (const operation of operations) {
            const args = sampleArguments[operation.id]
            assert.isDefined(args, `no sample arguments for ${operation.id}`)
            const result = yield* callTool(client, operation.id, args!)
            assert.isFalse(result.isError, `${operation.id}: ${result.text}`)
            assert.strictEqual(result.structured.schema_version, 2)
            assert.strictEqual(result.structured.kind, operation.kind)
            assert.strictEqual(result.structured.receipt.operation, operation.id)
            assert.isFalse(result.structured.receipt.replayed)
            assert.deepStrictEqual(JSON.parse(result.text!), result.structured)
          }
          const usage = yield* callTool(client, "get_usage", {})
          assert.isFalse(usage.isError)
          assert.strictEqual(usage.structured.today.calls, operations.length)
          assert.strictEqual(usage.structured.free_tier.ip, ip)
          const rest = yield* app.call("/v1/usage", { key, ip })
          assert.deepStrictEqual(usage.structured, rest.body)
          assert.deepStrictEqual(JSON.parse(usage.text!), rest.body)
        })
      )

      it.effect(`${mode.name}: invalid arguments are REST's INVALID_INPUT problem, param included`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const { client, key, ip } = yield* trialClient(mode)
          const slug = person.public_identifier
          const cases: ReadonlyArray<readonly [string, Record<string, unknown>, string, string]> = [
            [
              "getProfile",
              { identifier: slug, sections: ["about", "hobbies"] },
              `/v1/profnet/profiles?identifier=${slug}&sections=about,hobbies`,
              "sections"
            ],
            ["getProfile", { sections: ["about"] }, "/v1/profnet/profiles?sections=about", "identifier"],
            [
              "getProfile",
              { identifier: slug, sections: ["skills", "about", "skills"] },
              `/v1/profnet/profiles?identifier=${slug}&sections=skills,about,skills`,
              "sections"
            ],
            [
              "getProfile",
              { identifier: slug, sections: ["about", "experience", "education", "skills", "about"] },
              `/v1/profnet/profiles?identifier=${slug}&sections=about,experience,education,skills,about`,
              "sections"
            ],
            [
              "getForumUser",
              { username: "someone", sections: ["posts", "posts"] },
              "/v1/forum/users?username=someone&sections=posts,posts",
              "sections"
            ],
            [
              "searchPeople",
              { keywords: "engineer", limit: 99 },
              "/v1/profnet/search?keywords=engineer&limit=99",
              "limit"
            ],
            [
              "getCompany",
              { identifier: "acme", max_credits: -1 },
              "/v1/profnet/companies?identifier=acme&max_credits=-1",
              "max_credits"
            ],
            [
              "getCompany",
              { identifier: "acme", freshness: "soon" },
              "/v1/profnet/companies?identifier=acme&freshness=soon",
              "freshness"
            ],
            [
              "getCommunity",
              { community_name: "python", include_settings: "yes" },
              "/v1/forum/communities?community_name=python&include_settings=yes",
              "include_settings"
            ]
          ]
          for (const [tool, args, path, param] of cases) {
            const result = yield* callTool(client, tool, args)
            const rest = yield* app.call(path, { key, ip })
            assert.isTrue(result.isError, tool)
            assert.strictEqual(rest.status, 400)
            assert.isUndefined(result.structured, "an error result has no structuredContent")
            assert.strictEqual(result.problem.code, "INVALID_INPUT")
            assert.strictEqual(result.problem.param, param)
            assert.deepStrictEqual(result.problem, rest.body)
            assert.deepStrictEqual(JSON.parse(result.text!), rest.body)
          }
          const shortKey = yield* callTool(client, "getCompany", {
            identifier: "acme",
            idempotency_key: "short"
          })
          const restShortKey = yield* app.call("/v1/profnet/companies?identifier=acme", {
            key,
            ip,
            idempotencyKey: "short"
          })
          assert.deepStrictEqual(shortKey.problem, restShortKey.body)
          // A JSON number or boolean for a string parameter is refused, never stringified (a long
          // id has already lost digits); integer and boolean parameters still take JSON scalars.
          const stringCases: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
            ["getTweet", { id: Number("1234567890123456789") }, "id"],
            ["getForumPosts", { ids: ["1abc2d", 42] }, "ids"],
            ["getCompany", { identifier: true }, "identifier"],
            ["getCompany", { identifier: "acme", idempotency_key: 12345678901 }, "idempotency_key"]
          ]
          for (const [tool, args, param] of stringCases) {
            const result = yield* callTool(client, tool, args)
            assert.isTrue(result.isError, tool)
            assert.isUndefined(result.structured)
            assert.strictEqual(result.problem.code, "INVALID_INPUT")
            assert.strictEqual(result.problem.param, param)
            assert.include(result.problem.message, "expected a string")
          }
        })
      )
    }

    it.effect("trial caps, max_credits and unknown entities are error results with REST's problem", () =>
      Effect.gen(function* () {
        const { client, account_id } = yield* trialClient(modes[0])
        const slug = person.public_identifier
        const cap = yield* callTool(client, "searchPeople", { keywords: "engineer", limit: 20 })
        assert.isTrue(cap.isError)
        assert.strictEqual(cap.problem.code, "TRIAL_CAP_EXCEEDED")
        assert.strictEqual(cap.problem.status, 403)
        assert.strictEqual(cap.problem.param, "limit")
        assert.notInclude(cap.problem.upgrade_url, account_id)
        assert.include(cap.problem.offer.checkout_url, account_id)
        assert.strictEqual(cap.problem.offer.offer_version, 1)
        assert.strictEqual(cap.problem.offer.reason, "TRIAL_CAP_EXCEEDED")
        assert.strictEqual(cap.problem.offer.resume.action, "retry_fresh_idempotency_key")
        const realtime = yield* callTool(client, "getProfile", { identifier: slug, freshness: "realtime" })
        assert.strictEqual(realtime.problem.code, "TRIAL_CAP_EXCEEDED")
        assert.strictEqual(realtime.problem.param, "freshness")
        const quote = yield* callTool(client, "getProfile", { identifier: slug, max_credits: 3 })
        assert.isTrue(quote.isError)
        assert.strictEqual(quote.problem.code, "QUOTE_EXCEEDS_MAX_CREDITS")
        assert.strictEqual(quote.problem.status, 402)
        const missing = yield* callTool(client, "getProfile", { identifier: "nobody-here-0zz0zz0" })
        assert.isTrue(missing.isError)
        assert.strictEqual(missing.problem.code, "NOT_FOUND")
        assert.strictEqual(missing.problem.status, 404)
        const usage = yield* callTool(client, "get_usage", {})
        assert.deepStrictEqual(usage.structured.today, { credits: 0, calls: 0 })
      })
    )

    it.effect("an optional argument sent empty is absent, on MCP as on REST; a required one is refused", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { client, key, ip } = yield* trialClient(modes[0])
        // A trial key gets first pages only: `cursor: ""` is no cursor, and `max_credits: ""` no ceiling.
        const first = yield* callTool(client, "searchPeople", {
          keywords: "engineer",
          cursor: "",
          max_credits: "",
          freshness: ""
        })
        assert.isFalse(first.isError, first.text)
        const rest = yield* app.call("/v1/profnet/search?keywords=engineer&cursor=&max_credits=&freshness=", {
          key,
          ip
        })
        assert.strictEqual(rest.status, 200, JSON.stringify(rest.body))
        const required = yield* callTool(client, "searchPeople", { keywords: "", cursor: "" })
        const restRequired = yield* app.call("/v1/profnet/search?keywords=&cursor=", { key, ip })
        assert.strictEqual(restRequired.status, 400)
        assert.strictEqual(restRequired.body.param, "keywords")
        assert.strictEqual(required.problem.code, restRequired.body.code)
        assert.strictEqual(required.problem.param, "keywords")
      })
    )

    it.effect("entitlement comes before validation; every request is authenticated again", () =>
      Effect.gen(function* () {
        const admin = yield* Admin
        const { client, account_id } = yield* trialClient(modes[0])
        yield* Effect.orDie(admin.entitle(account_id, ["profnet"]))
        const refused = yield* callTool(client, "forumSearch", {})
        assert.isTrue(refused.isError)
        assert.strictEqual(refused.problem.code, "NOT_ENTITLED")
        assert.strictEqual(refused.problem.status, 403)
        assert.deepStrictEqual((yield* callTool(client, "get_usage", {})).structured.platforms, ["profnet"])
        yield* Effect.orDie(admin.setState(account_id, "suspended"))
        const error = yield* Effect.flip(
          Effect.tryPromise(() => client.callTool({ name: "get_usage", arguments: {} }))
        )
        assert.include(String(error.cause), "401")
      })
    )

    it.effect("an upstream outage is UPSTREAM_UNAVAILABLE with retry_after_seconds", () =>
      Effect.gen(function* () {
        const faults = yield* UpstreamFaults
        const { client } = yield* trialClient(modes[1])
        yield* faults.set({ outage: true })
        const result = yield* callTool(client, "forumSearch", { query: "outage check" }).pipe(
          Effect.ensuring(faults.set({ outage: false }))
        )
        assert.isTrue(result.isError)
        assert.strictEqual(result.problem.code, "UPSTREAM_UNAVAILABLE")
        assert.isAbove(result.problem.retry_after_seconds, 0)
      })
    )

    it.effect("paid keys need idempotency_key; the same key replays across REST and MCP, charged once", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { client, key, ip } = yield* paidClient(modes[0], 100)
        const slug = person.public_identifier
        const required = yield* callTool(client, "getCompany", { identifier: "acme" })
        assert.isTrue(required.isError)
        assert.strictEqual(required.problem.code, "IDEMPOTENCY_KEY_REQUIRED")
        assert.strictEqual(required.problem.status, 400)

        // REST first, then MCP with the same key and arguments.
        const first = uuid()
        const rest = yield* app.call(
          `/v1/profnet/profiles?identifier=${slug}&sections=skills,about&freshness=realtime`,
          {
            key,
            ip,
            idempotencyKey: first
          }
        )
        assert.strictEqual(rest.status, 200)
        const replay = yield* callTool(client, "getProfile", {
          identifier: slug,
          sections: ["about", "skills"],
          freshness: "realtime",
          idempotency_key: first
        })
        assert.isFalse(replay.isError, replay.text)
        assert.isTrue(replay.structured.receipt.replayed)
        assert.strictEqual(replay.structured.receipt.id, rest.body.receipt.id)

        // MCP first, then REST.
        const second = uuid()
        const original = yield* callTool(client, "getPosts", {
          identifier: slug,
          freshness: "realtime",
          idempotency_key: second
        })
        assert.isFalse(original.structured.receipt.replayed)
        const restReplay = yield* app.call(`/v1/profnet/posts?identifier=${slug}&freshness=realtime`, {
          key,
          ip,
          idempotencyKey: second
        })
        assert.strictEqual(restReplay.headers.get("idempotent-replayed"), "true")
        assert.strictEqual(restReplay.body.receipt.id, original.structured.receipt.id)
        const reused = yield* callTool(client, "getPosts", { identifier: slug, idempotency_key: second })
        assert.strictEqual(reused.problem.code, "IDEMPOTENCY_KEY_REUSED")

        const charged = rest.body.receipt.charged + original.structured.receipt.charged
        const usage = yield* callTool(client, "get_usage", {})
        assert.deepStrictEqual(usage.structured.today, { credits: charged, calls: 2 })
        assert.strictEqual(usage.structured.balance.purchased, 100 - charged)
      })
    )

    it.effect("no key or a bad key is 401 with an RFC 9728 challenge and REST's problem", () =>
      Effect.gen(function* () {
        for (const path of ["/mcp", "/mcp/forum"]) {
          const metadata = `${baseUrl}/.well-known/oauth-protected-resource${path}`
          const none = yield* mcpPost(path, {})
          assert.strictEqual(none.status, 401)
          const recipe = `Mint a free trial key with curl -X POST ${baseUrl}/v1/keys/mint (no body, no auth), then add the HTTP header Authorization: Bearer <key> to this MCP server's configuration. Docs: ${baseUrl}/docs`
          assert.strictEqual(
            none.headers.get("www-authenticate"),
            `Bearer error_description="No key was sent. ${recipe}", resource_metadata="${metadata}"`
          )
          // The official client's parser reads the recipe back whole, as a client would print it.
          const parsed = extractWWWAuthenticateParams(
            new Response(null, { status: 401, headers: none.headers })
          )
          assert.strictEqual(parsed.errorDescription, `No key was sent. ${recipe}`)
          assert.strictEqual(parsed.resourceMetadataUrl?.href, metadata)
          assert.strictEqual(none.headers.get("content-type"), "application/problem+json")
          assert.strictEqual(none.body.code, "KEY_REQUIRED")
          assert.strictEqual(none.body.mint.url, `${baseUrl}/v1/keys/mint`)
          for (const key of ["svc_trial_doesnotexist0000000000000", "not-a-key"]) {
            const bad = yield* mcpPost(path, { key })
            assert.strictEqual(bad.status, 401)
            const challenge = bad.headers.get("www-authenticate")!
            assert.match(
              challenge,
              /^Bearer error="invalid_token", error_description="[^"]+", resource_metadata="[^"]+"$/
            )
            assert.include(challenge, recipe)
            assert.include(challenge, `resource_metadata="${metadata}"`)
            assert.strictEqual(bad.body.code, "UNAUTHORIZED")
          }
        }
      })
    )

    it.effect("serves the protected-resource metadata of the service and of every mount", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (const path of ["", "/mcp", ...platforms.map((platform) => `/mcp/${platform}`)]) {
          const reply = yield* app.call(`/.well-known/oauth-protected-resource${path}`)
          assert.strictEqual(reply.status, 200)
          assert.strictEqual(reply.body.resource, `${baseUrl}${path}`)
          assert.deepStrictEqual(reply.body.bearer_methods_supported, ["header"])
          assert.isString(reply.body.resource_name)
          assert.strictEqual(reply.body.resource_documentation, `${baseUrl}/docs`)
        }
      })
    )

    it.effect("Host and Origin are checked against BASE_URL and loopback (DNS rebinding)", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key } = yield* app.mint(freshIp())
        const port = new URL(app.url).port
        const post = (headers: Record<string, string>) =>
          rawRequest(`${app.url}/mcp`, {
            headers: { ...jsonRpcHeaders, authorization: `Bearer ${key}`, ...headers },
            body: initializeBody
          })
        const evilHost = yield* post({ host: "evil.example.com" })
        assert.strictEqual(evilHost.status, 403)
        assert.strictEqual(evilHost.body.error.code, -32000)
        const evilOrigin = yield* post({ origin: "http://evil.example.com" })
        assert.strictEqual(evilOrigin.status, 403)
        for (const headers of [
          { host: `localhost:${port}` },
          { host: "svc.test" },
          { origin: `http://127.0.0.1:${port}` }
        ]) {
          assert.strictEqual((yield* post(headers)).status, 200, JSON.stringify(headers))
        }
      })
    )

    it.effect(
      "stateless transport: GET and DELETE are 405; oversized bodies 413; other paths still 404",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const { key } = yield* app.mint(freshIp())
          for (const method of ["GET", "DELETE"]) {
            const reply = yield* app.call("/mcp", { method, key, headers: { accept: "text/event-stream" } })
            assert.strictEqual(reply.status, 405, method)
          }
          const big = yield* mcpPost("/mcp", { key, body: JSON.stringify({ padding: "x".repeat(70_000) }) })
          assert.strictEqual(big.status, 413)
          assert.strictEqual(big.body.code, "PAYLOAD_TOO_LARGE")
          const unknown = yield* mcpPost("/mcp/nowhere", { key })
          assert.strictEqual(unknown.status, 404)
          assert.strictEqual(unknown.body.code, "NOT_FOUND")
        })
    )
  })

  // The test operations can fail with a defect on request: the pipeline dies rather than failing.
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    for (const mode of modes) {
      it.effect(`${mode.name}: a defect is an INTERNAL error result, not a hung call`, () =>
        Effect.gen(function* () {
          const { client } = yield* trialClient(mode)
          const result = yield* callTool(client, "testEcho", { value: "x", fail: "defect" })
          assert.isTrue(result.isError)
          assert.strictEqual(result.problem.code, "INTERNAL")
          assert.strictEqual(result.problem.status, 500)
          assert.match(result.problem.receipt_id, /^rcpt_[0-9A-Za-z]+$/)
          assert.include(result.problem.message, result.problem.receipt_id)
          const ok = yield* callTool(client, "testEcho", { value: "x" })
          assert.isFalse(ok.isError)
          const usage = yield* callTool(client, "get_usage", {})
          assert.deepStrictEqual(usage.structured.today, { credits: 4, calls: 1 })
        })
      )
    }
  })
})
