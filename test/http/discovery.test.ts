import { readFileSync } from "node:fs"
import { assert, describe, layer, it as plain } from "@effect/vitest"
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server"
import { Effect, Option } from "effect"
import type { AppConfigShape } from "../../src/config.ts"
import { errorCatalog } from "../../src/contract/errors.ts"
import { mcpMounts } from "../../src/contract/mcpMounts.ts"
import { llmsTxt } from "../../src/surfaces/http/discoveryRoutes.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

/** BASE_URL of the test configuration. */
const baseUrl = "http://svc.test"

describe(`discovery: server card, AI catalogue, llms.txt (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "GET /mcp/server-card names every mount, its protocol revisions and both ways to authenticate",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const card = yield* app.call("/mcp/server-card")
          assert.strictEqual(card.status, 200)
          assert.match(card.headers.get("content-type") ?? "", /^application\/json/)
          assert.strictEqual(card.body.name, "svc-data")
          assert.isString(card.body.version)
          assert.isString(card.body.description)
          assert.deepStrictEqual(
            card.body.remotes.map((remote: { url: string }) => remote.url),
            mcpMounts.map((mount) => `${baseUrl}${mount.path}`)
          )
          for (const remote of card.body.remotes) {
            assert.strictEqual(remote.type, "streamable-http")
            assert.includeMembers(remote.supportedProtocolVersions, [...SUPPORTED_PROTOCOL_VERSIONS])
            assert.include(remote.supportedProtocolVersions, "2026-07-28")
          }
          const schemes = card.body.authentication.schemes
          assert.deepStrictEqual(
            schemes.map((scheme: { type: string }) => scheme.type),
            ["bearer", "oauth2"]
          )
          // Each protected-resource metadata URL answers.
          for (const url of schemes[1].protectedResourceMetadata as Array<string>) {
            const metadata = yield* app.call(url.slice(baseUrl.length))
            assert.strictEqual(metadata.status, 200, url)
          }
        })
    )

    it.effect("GET /.well-known/ai-catalog.json lists the server card, and each entry answers", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const catalog = yield* app.call("/.well-known/ai-catalog.json")
        assert.strictEqual(catalog.status, 200)
        assert.match(catalog.headers.get("content-type") ?? "", /^application\/json/)
        const card = catalog.body.entries.find((entry: { type: string }) => entry.type === "mcp-server-card")
        assert.strictEqual(card.url, `${baseUrl}/mcp/server-card`)
        for (const entry of catalog.body.entries) {
          const reached = yield* app.call(entry.url.slice(baseUrl.length))
          assert.strictEqual(reached.status, 200, entry.url)
        }
      })
    )

    it.effect("GET /llms.txt is plain text: mint, call, receipts, every error code, every rail", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const text = yield* app.call("/llms.txt")
        assert.strictEqual(text.status, 200)
        assert.match(text.headers.get("content-type") ?? "", /^text\/plain/)
        for (const needle of [
          "/v1/keys/mint",
          "/mcp/profnet",
          "/.well-known/jwks.json",
          "/v1/checkout",
          "- local:"
        ])
          assert.include(text.text, needle)
        for (const [code, entry] of Object.entries(errorCatalog))
          assert.include(text.text, `- ${code} (HTTP ${entry.status}`)
        assert.notInclude(text.text, "- stripe:")
      })
    )
  })

  plain("llms.txt lists the stripe rail only when it is configured", () => {
    const both = llmsTxt({ baseUrl, checkoutRails: ["stripe", "local"], x402: Option.none() })
    assert.include(both, "- stripe:")
    assert.include(both, "- local:")
    assert.isBelow(both.indexOf("- stripe:"), both.indexOf("- local:"))
    assert.notInclude(both, "- x402")
  })

  plain("llms.txt tells an agent how to pay with x402 only when the rail is configured", () => {
    const x402 = {
      payTo: "0x000000000000000000000000000000000000dEaD",
      network: "eip155:8453",
      asset: "0x0000000000000000000000000000000000000001",
      assetName: "USD Coin",
      assetVersion: "2",
      atomicPerCredit: 2000,
      minCredits: 500
    } as unknown as Option.Option.Value<AppConfigShape["x402"]>
    const text = llmsTxt({ baseUrl, checkoutRails: ["local"], x402: Option.some(x402) })
    assert.include(text, "- x402")
    assert.include(text, "PAYMENT-SIGNATURE")
    assert.include(text, `${baseUrl}/v1/credits/x402`)
    assert.include(text, "eip155:8453")
  })

  /**
   * The MCP Registry's server.json (schema 2025-12-11, as its documentation states it): `name`
   * reverse-DNS `namespace/name` (3-200 characters), `description` 1-100, `version` an exact
   * version, `remotes` with `type` streamable-http or sse and a `url`.
   */
  plain("server.json at the repository root has the MCP Registry's shape and names every mount", () => {
    const server = JSON.parse(readFileSync(new URL("../../server.json", import.meta.url), "utf8"))
    assert.match(
      server.$schema,
      /^https:\/\/static\.modelcontextprotocol\.io\/schemas\/\d{4}-\d{2}-\d{2}\/server\.schema\.json$/
    )
    assert.match(server.name, /^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/)
    assert.isAtLeast(server.name.length, 3)
    assert.isAtMost(server.name.length, 200)
    assert.match(server.name.split("/")[0], /^[a-z0-9-]+(\.[a-z0-9-]+)+$/, "reverse-DNS namespace")
    assert.isAtLeast(server.description.length, 1)
    assert.isAtMost(server.description.length, 100)
    assert.isAtMost((server.title ?? "").length, 100)
    assert.match(server.version, /^\d+\.\d+\.\d+$/, "an exact version, no range")
    assert.deepStrictEqual(
      server.remotes.map((remote: { url: string }) => new URL(remote.url).pathname),
      mcpMounts.map((mount) => mount.path)
    )
    for (const remote of server.remotes) {
      assert.include(["streamable-http", "sse"], remote.type)
      assert.doesNotThrow(() => new URL(remote.url))
    }
    const allowed = new Set([
      "$schema",
      "name",
      "title",
      "description",
      "version",
      "remotes",
      "packages",
      "repository",
      "websiteUrl",
      "icons",
      "_meta"
    ])
    for (const key of Object.keys(server)) assert.isTrue(allowed.has(key), key)
  })
})
