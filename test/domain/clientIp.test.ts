import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { canonicalIp, clientIp, forwardedAddress, matchesRange } from "../../src/domain/clientIp.ts"

const trusted = ["127.0.0.1", "::1", "10.0.0.0/8"]
const peer = "127.0.0.1"

const groups = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 })
const ipv4 = fc
  .array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 })
  .map((o) => o.join("."))
const isMapped = (g: ReadonlyArray<number>) => g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff

/** Full eight-group spelling, each group padded or not, upper or lower case, at random. */
const spelled = groups.chain((g) =>
  fc.tuple(...g.map(() => fc.tuple(fc.boolean(), fc.boolean()))).map((styles) => ({
    groups: g,
    text: g
      .map((x, i) => {
        const [pad, upper] = styles[i]!
        const hex = pad ? x.toString(16).padStart(4, "0") : x.toString(16)
        return upper ? hex.toUpperCase() : hex
      })
      .join(":")
  }))
)

describe("client IP", () => {
  it("IPv6 is canonical in RFC 5952 form, however it was spelled (WHATWG's serializer as the oracle)", () => {
    fc.assert(
      fc.property(spelled, ({ groups: g, text }) => {
        fc.pre(!isMapped(g))
        const expected = new URL(`http://[${text}]/`).hostname.slice(1, -1)
        assert.strictEqual(canonicalIp(text), expected)
        assert.strictEqual(canonicalIp(expected), expected)
      })
    )
    assert.strictEqual(canonicalIp("2001:DB8:0:0:1:0:0:1"), "2001:db8::1:0:0:1")
    assert.strictEqual(canonicalIp("2001:0db8:0000:0000:0000:0000:0000:0001"), "2001:db8::1")
    assert.strictEqual(canonicalIp("2001:db8:0:1:1:1:1:1"), "2001:db8:0:1:1:1:1:1")
    assert.strictEqual(canonicalIp("0:0:0:0:0:0:0:0"), "::")
    assert.strictEqual(canonicalIp("fe80::1%eth0"), "fe80::1")
    assert.strictEqual(canonicalIp("::1.2.3.4"), "::102:304")
  })

  it("IPv4-mapped IPv6, in any spelling, is the IPv4 address", () => {
    fc.assert(
      fc.property(ipv4, (v4) => {
        const [a, b, c, d] = v4.split(".").map(Number) as [number, number, number, number]
        const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
        for (const text of [v4, `::ffff:${v4}`, `::FFFF:${hex}`, `0:0:0:0:0:ffff:${v4}`, `0000::ffff:${hex}`])
          assert.strictEqual(canonicalIp(text), v4, text)
      })
    )
  })

  it("a forwarded hop may carry a port or brackets; anything that is not an address is no hop", () => {
    fc.assert(
      fc.property(ipv4, fc.integer({ min: 0, max: 65535 }), (v4, port) => {
        assert.strictEqual(forwardedAddress(`${v4}:${port}`), v4)
        assert.strictEqual(forwardedAddress(` ${v4} `), v4)
        assert.strictEqual(forwardedAddress(`[::ffff:${v4}]:${port}`), v4)
      })
    )
    assert.strictEqual(forwardedAddress("[2001:DB8::1]:443"), "2001:db8::1")
    assert.strictEqual(forwardedAddress("[2001:db8::1]"), "2001:db8::1")
    assert.strictEqual(forwardedAddress("2001:db8::1"), "2001:db8::1")
    for (const junk of [
      "198.51.100.211.x",
      "198.51.100.211:",
      "198.51.100.211:port",
      "198.51.100.211:123456",
      "[198.51.100.211]",
      "[2001:db8::1]:",
      "2001:db8::1:443x",
      "unknown",
      "localhost",
      "01.2.3.4",
      "127.1",
      "",
      "_hidden"
    ])
      assert.isUndefined(forwardedAddress(junk), junk)
  })

  it("the three spellings of one client are one client; a non-address hop leaves the proxy's address", () => {
    assert.strictEqual(clientIp(peer, "198.51.100.211:1", trusted), "198.51.100.211")
    assert.strictEqual(clientIp(peer, "198.51.100.211:2", trusted), "198.51.100.211")
    assert.strictEqual(clientIp(peer, "198.51.100.211.x", trusted), peer)
    assert.strictEqual(clientIp(peer, "junk, 10.1.2.3", trusted), "10.1.2.3")
    assert.strictEqual(clientIp(peer, "198.51.100.7, junk, 10.1.2.3", trusted), "10.1.2.3")
    assert.strictEqual(clientIp(peer, "198.51.100.7, 10.1.2.3", trusted), "198.51.100.7")
    assert.strictEqual(clientIp(peer, "198.51.100.7,, 10.1.2.3 ,", trusted), "198.51.100.7")
    assert.strictEqual(clientIp(peer, "10.2.2.2, 10.1.2.3", trusted), "10.2.2.2")
    assert.strictEqual(clientIp("::ffff:127.0.0.1", "[2001:DB8::A]:8080", trusted), "2001:db8::a")
    assert.strictEqual(clientIp("::FFFF:7f00:1", undefined, trusted), "127.0.0.1")
    // An untrusted peer is the client whatever it forwards.
    assert.strictEqual(clientIp("203.0.113.5", "198.51.100.211", trusted), "203.0.113.5")
    assert.strictEqual(clientIp("2001:0db8::0001", "198.51.100.211", trusted), "2001:db8::1")
  })

  it("no forwarded text names a client that is not an address in it: at worst it lands on the proxy", () => {
    const hop = fc.oneof(
      fc.string(),
      ipv4,
      ipv4.map((v4) => `${v4}:80`),
      ipv4.map((v4) => `${v4}.x`),
      fc.constantFrom("10.1.2.3", "[::1]:1", "::ffff:10.0.0.1", "unknown")
    )
    fc.assert(
      fc.property(fc.array(hop, { maxLength: 5 }), (hops) => {
        const header = hops.join(",")
        const client = clientIp(peer, header, trusted)
        const named = header.split(",").map(forwardedAddress)
        assert.isTrue(client === peer || named.includes(client), `${JSON.stringify(header)} -> ${client}`)
        assert.strictEqual(canonicalIp(client), client)
      })
    )
  })

  it("trusted ranges match exact addresses and CIDR blocks of either family, canonically", () => {
    assert.isTrue(matchesRange("10.20.30.40", "10.0.0.0/8"))
    assert.isTrue(matchesRange("::ffff:10.20.30.40", "10.0.0.0/8"))
    assert.isFalse(matchesRange("11.0.0.1", "10.0.0.0/8"))
    assert.isTrue(matchesRange("fd00::abcd", "fd00::/8"))
    assert.isTrue(matchesRange("0:0:0:0:0:0:0:1", "::1"))
    assert.isFalse(matchesRange("::1", "127.0.0.1"))
    assert.isFalse(matchesRange("10.0.0.1", "10.0.0.0/33"))
    assert.isFalse(matchesRange("junk", "10.0.0.0/8"))
  })
})
