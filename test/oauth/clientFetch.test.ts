import type { LookupAddress } from "node:dns"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { clientFetch } from "../../src/oauth/clientFetch.ts"
import { documentServer, json } from "../support/documentServer.ts"

let server: Awaited<ReturnType<typeof documentServer>>
beforeAll(async () => {
  server = await documentServer({
    "/doc.json": json({ hello: "world" }),
    "/redirect.json": (_request, response) => response.writeHead(302, { location: "/doc.json" }).end("moved"),
    "/big.json": (_request, response) =>
      response.writeHead(200, { "content-type": "application/json" }).end(`"${"a".repeat(6000)}"`),
    "/streamed.json": (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" })
      const chunk = "a".repeat(1000)
      let sent = 0
      const timer = setInterval(() => {
        if (sent++ < 20 && !response.destroyed) response.write(chunk)
        else {
          clearInterval(timer)
          response.end()
        }
      }, 5)
    },
    "/slow.json": () => undefined
  })
})
afterAll(() => server.close())

const at = (host: string, path: string) => `https://${host}:${server.port}${path}`
const resolver = (answers: Record<string, ReadonlyArray<LookupAddress>>) => {
  const asked: Array<string> = []
  return {
    asked,
    resolve: async (hostname: string) => {
      asked.push(hostname)
      return answers[hostname] ?? []
    }
  }
}
const loopback: ReadonlyArray<LookupAddress> = [{ address: "127.0.0.1", family: 4 }]
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => assert.fail("expected a refusal"),
    (error: unknown) => String(error instanceof Error ? error.message : error)
  )

describe("fetching a URL a client named", () => {
  it("loopback and private addresses are refused before any connection, however they are written", async () => {
    const fetch = clientFetch({ allowPrivate: false, timeoutMs: 2000, maxBytes: 5120 })
    const before = server.connections()
    for (const host of [
      "127.0.0.1",
      "localhost",
      "[::1]",
      "0.0.0.0",
      "[::ffff:127.0.0.1]",
      "127.1",
      "0x7f000001"
    ]) {
      const started = performance.now()
      const why = await failure(fetch(at(host, "/doc.json"), { headers: { accept: "application/json" } }))
      assert.include(why, "not a public address", host)
      assert.isBelow(performance.now() - started, 500, `${host}: refused at once`)
    }
    // A name that resolves to a private address, or to a public and a private one.
    const names = resolver({
      "agent.test": [{ address: "10.1.2.3", family: 4 }],
      "mixed.test": [
        { address: "93.184.216.34", family: 4 },
        { address: "169.254.169.254", family: 4 }
      ],
      "cgnat.test": [{ address: "100.64.0.9", family: 4 }],
      "mapped.test": [{ address: "::ffff:127.0.0.1", family: 6 }]
    })
    const named = clientFetch({
      allowPrivate: false,
      timeoutMs: 2000,
      maxBytes: 5120,
      resolve: names.resolve
    })
    for (const host of ["agent.test", "mixed.test", "cgnat.test", "mapped.test"])
      assert.include(await failure(named(at(host, "/doc.json"))), "not a public address", host)
    assert.strictEqual(server.connections(), before, "no connection was opened")
    assert.include(await failure(fetch(`http://example.com:${server.port}/doc.json`)), "only https")
  })

  it("the connection goes to the address that was checked, with the name's certificate checked", async () => {
    const names = resolver({
      "agent.test": loopback,
      "other.test": loopback,
      // Nothing listens on ::1 here: the next checked address is tried, still without a new lookup.
      "twice.test": [{ address: "::1", family: 6 }, ...loopback]
    })
    const fetch = clientFetch({ allowPrivate: true, timeoutMs: 2000, maxBytes: 5120, resolve: names.resolve })
    // `agent.test` exists only in this resolver: the system's resolver is never asked.
    const answer = await fetch(at("agent.test", "/doc.json"), { headers: { accept: "application/json" } })
    assert.strictEqual(answer.status, 200)
    assert.deepStrictEqual(await answer.json(), { hello: "world" })
    assert.strictEqual(answer.headers.get("cache-control"), "max-age=600")
    assert.deepStrictEqual(names.asked, ["agent.test"], "resolved once")
    // (The certificate names agent.test, not twice.test: a TLS refusal proves the connection was made.)
    const second = await failure(fetch(at("twice.test", "/doc.json")))
    assert.match(second, /altnames|twice\.test/i)
    assert.deepStrictEqual(names.asked, ["agent.test", "twice.test"])
    // The certificate does not name other.test: refused, verification is on.
    assert.match(await failure(fetch(at("other.test", "/doc.json"))), /altnames|certificate|other\.test/i)
  })

  it("no redirect is followed; a body over the cap and a server that does not answer are refused", async () => {
    const fetch = clientFetch({ allowPrivate: true, timeoutMs: 700, maxBytes: 5120 })
    const seen = server.requests.length
    const moved = await fetch(at("127.0.0.1", "/redirect.json"))
    assert.strictEqual(moved.status, 302)
    assert.deepStrictEqual(server.requests.slice(seen), ["/redirect.json"])
    assert.include(await failure(fetch(at("127.0.0.1", "/big.json"))), "more than 5120 bytes")
    assert.include(await failure(fetch(at("127.0.0.1", "/streamed.json"))), "more than 5120 bytes")
    const started = performance.now()
    assert.include(await failure(fetch(at("127.0.0.1", "/slow.json"))), "within 700 ms")
    assert.isBelow(performance.now() - started, 1500)
  })
})
