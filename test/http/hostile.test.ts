import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { assertInvalid } from "../support/assertions.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const freshIp = ipSequence("10.60")

describe(`hostile input (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("a control character in a path parameter is INVALID_INPUT naming it, not INTERNAL", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        for (const id of ["rcpt_%00", "%00", "rcpt_%01x", "rcpt_%1F", "rcpt_%7F", "a%0Ab"]) {
          const reply = yield* app.call(`/v1/receipts/${id}`, { key, ip })
          assertInvalid(reply, "id", /control character/)
          assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
        }
        // Other odd but printable text is simply not found.
        assert.strictEqual((yield* app.call("/v1/receipts/rcpt_%C3%A9", { key, ip })).status, 404)
      })
    )

    it.effect("a control character in any query parameter is INVALID_INPUT naming it", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const cases = [
          ["/v1/profnet/test-echo?value=a%00b", "value"],
          ["/v1/profnet/test-echo?value=ok&cursor=%1B%5B2J", "cursor"],
          ["/v1/profnet/test-echo?value=%7F", "value"],
          ["/v1/profnet/test-echo?value=ok&unknown=%00", "unknown"],
          ["/v1/profnet/test-resolve?value=%09tab", "value"],
          ["/v1/receipts?cursor=%00", "cursor"],
          ["/v1/receipts?limit=5%00", "limit"]
        ] as const
        for (const [path, param] of cases) {
          const reply = yield* app.call(path, { key, ip })
          assertInvalid(reply, param, /control character/)
        }
        // Nothing was charged for the refused calls.
        assert.strictEqual((yield* app.call("/v1/usage", { key, ip })).body.free_tier.remaining_today, 200)
        // As for any malformed parameter, authentication comes first.
        assert.strictEqual((yield* app.call("/v1/receipts/rcpt_%00")).body.code, "KEY_REQUIRED")
      })
    )
    it.effect("spellings of one forwarded address share one free budget and one mint limit", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key } = yield* app.mint("198.51.100.211:1")
        const spent = yield* app.call("/v1/profnet/test-echo?value=x&cost=150", {
          key,
          ip: "198.51.100.211:2"
        })
        assert.strictEqual(spent.status, 200)
        const usage = yield* app.call("/v1/usage", { key, ip: "[::FFFF:198.51.100.211]:443" })
        assert.strictEqual(usage.body.free_tier.ip, "198.51.100.211")
        assert.strictEqual(usage.body.free_tier.remaining_today, 50)
        const capped = yield* app.call("/v1/profnet/test-echo?value=x&cost=100", {
          key,
          ip: "198.51.100.211"
        })
        assert.strictEqual(capped.body.code, "TRIAL_CAP_EXCEEDED")
        for (const ip of ["198.51.100.211:2", "198.51.100.211:3", "::ffff:198.51.100.211", "198.51.100.211"])
          assert.strictEqual((yield* app.call("/v1/keys/mint", { method: "POST", ip })).status, 200, ip)
        const limited = yield* app.call("/v1/keys/mint", { method: "POST", ip: "198.51.100.211:9" })
        assert.strictEqual(limited.body.code, "RATE_LIMITED")
        // Not an address: the trusted proxy's own address (here the loopback peer) stands, one limit for all.
        const junk = ["198.51.100.211.x", "unknown", "[198.51.100.211]", "1.2.3.4.5", "x, 198.51.100.211.x"]
        for (const ip of junk)
          assert.strictEqual((yield* app.call("/v1/keys/mint", { method: "POST", ip })).status, 200, ip)
        const junkLimited = yield* app.call("/v1/keys/mint", { method: "POST", ip: "anything-else" })
        assert.strictEqual(junkLimited.body.code, "RATE_LIMITED")
        const proxied = yield* app.call("/v1/usage", { key, ip: "198.51.100.211.x" })
        assert.strictEqual(proxied.body.free_tier.ip, "127.0.0.1")
      })
    )
  })

  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "percent-escapes inside a URL identifier that are malformed or decode to controls are INVALID_INPUT",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          for (const url of [
            "https://profnet.com/in/%25ZZ",
            "https://profnet.com/in/a%25E0%25A4%25A",
            "https://profnet.com/in/%2500"
          ]) {
            const reply = yield* app.call(`/v1/profnet/resolve-url?url=${url}`, { key, ip })
            assertInvalid(reply, "url", /not a profile/)
          }
        })
    )
  })
})
