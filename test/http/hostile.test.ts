import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { refusalOf } from "../../src/surfaces/http/protocolErrors.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { assertInvalid } from "../support/assertions.ts"
import { storeName } from "../support/database.ts"
import { rawExchange } from "../support/rawHttp.ts"
import { testOperations } from "../support/testOperations.ts"

const freshIp = ipSequence("10.60")

describe(`hostile input (${storeName})`, () => {
  it("each of Node's parse failures maps to a status and a contract code", () => {
    const cases = [
      ["HPE_HEADER_OVERFLOW", 413, "PAYLOAD_TOO_LARGE"],
      ["HPE_CHUNK_EXTENSIONS_OVERFLOW", 413, "PAYLOAD_TOO_LARGE"],
      ["ERR_HTTP_REQUEST_TIMEOUT", 408, "INVALID_INPUT"],
      ["HPE_INVALID_METHOD", 400, "INVALID_INPUT"],
      ["HPE_LF_EXPECTED", 400, "INVALID_INPUT"],
      [undefined, 400, "INVALID_INPUT"]
    ] as const
    for (const [code, status, contractCode] of cases) {
      const refusal = refusalOf(Object.assign(new Error("Parse Error"), { code }))
      assert.strictEqual(refusal.status, status, code)
      assert.strictEqual(refusal.error.code, contractCode, code)
    }
  })

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
    it.effect("a path whose percent-escapes do not decode is INVALID_INPUT, not INTERNAL", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (const path of ["/v1/receipts/%ZZ", "/v1/receipts/%E0%A4%A", "/%ED%A0%80", "/v1/nothing/%"]) {
          const reply = yield* app.call(path)
          assert.strictEqual(reply.status, 400, path)
          assert.strictEqual(reply.body.code, "INVALID_INPUT", path)
          assert.match(reply.body.message, /percent-escape/, path)
        }
      })
    )

    it.effect("requests Node's parser refuses get a problem document, and the connection closes", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const long = "a".repeat(20 * 1024)
        const cases: ReadonlyArray<readonly [string, string | Buffer, number, string]> = [
          [
            "headers over 16 KB",
            `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${long}\r\n\r\n`,
            413,
            "PAYLOAD_TOO_LARGE"
          ],
          [
            "a URL over 16 KB",
            `GET /v1/usage?q=${long} HTTP/1.1\r\nHost: x\r\n\r\n`,
            413,
            "PAYLOAD_TOO_LARGE"
          ],
          [
            "raw non-ASCII in the request line",
            Buffer.concat([
              Buffer.from("GET /v1/caf"),
              Buffer.from([0xc3, 0xa9]),
              Buffer.from(" HTTP/1.1\r\nHost: x\r\n\r\n")
            ]),
            400,
            "INVALID_INPUT"
          ],
          [
            "NUL in the request line",
            "GET /v1/receipts/a\u0000b HTTP/1.1\r\nHost: x\r\n\r\n",
            400,
            "INVALID_INPUT"
          ],
          [
            "a bad Content-Length",
            "POST /v1/keys/mint HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
            400,
            "INVALID_INPUT"
          ],
          [
            "two Content-Lengths",
            "POST /v1/keys/mint HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            400,
            "INVALID_INPUT"
          ],
          [
            "a header without a colon",
            "GET /healthz HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n",
            400,
            "INVALID_INPUT"
          ],
          ["no Host on HTTP/1.1", "GET /healthz HTTP/1.1\r\n\r\n", 400, "INVALID_INPUT"],
          ["method FOO", "FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "INVALID_INPUT"],
          [
            "TLS to the plain port",
            Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]),
            400,
            "INVALID_INPUT"
          ],
          ["CONNECT", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 404, "NOT_FOUND"]
        ]
        for (const [name, request, status, code] of cases) {
          const reply = yield* rawExchange(app.url, request, { untilClose: true })
          assert.match(reply.statusLine, new RegExp(`^HTTP/1\\.1 ${status} `), name)
          assert.strictEqual(reply.headers["content-type"], "application/problem+json", name)
          assert.strictEqual(reply.body.code, code, name)
          assert.strictEqual(reply.body.status, status, name)
          assert.strictEqual(reply.body.doc_url, `http://svc.test/docs/errors#${code}`, name)
          assert.isTrue(reply.closed, `${name}: the connection closes`)
          assert.strictEqual((yield* app.call("/healthz")).status, 200, `${name}: still serving`)
        }
        const noHost = yield* rawExchange(app.url, "GET /healthz HTTP/1.1\r\n\r\n", { untilClose: true })
        assert.strictEqual(noHost.body.param, "Host")
        // HTTP/1.0 needs no Host.
        const old = yield* rawExchange(app.url, "GET /healthz HTTP/1.0\r\n\r\n", { untilClose: true })
        assert.strictEqual(old.status, 200)
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
