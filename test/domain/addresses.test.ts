import { assert, describe, it } from "@effect/vitest"
import { isPublicAddress } from "../../src/domain/addresses.ts"

describe("isPublicAddress", () => {
  it("public unicast IPv4 and IPv6 addresses", () => {
    for (const ip of [
      "8.8.8.8",
      "1.1.1.1",
      "93.184.216.34",
      "100.63.255.255",
      "100.128.0.0",
      "172.15.255.255",
      "172.32.0.0",
      "192.169.0.1",
      "223.255.255.255",
      "2001:4860:4860::8888",
      "2606:4700:4700::1111",
      "2a00:1450:4001:81b::200e",
      "::ffff:8.8.8.8"
    ])
      assert.isTrue(isPublicAddress(ip), ip)
  })

  it("loopback, private, link-local, unspecified, CGNAT, multicast, reserved and their mapped forms", () => {
    for (const ip of [
      "127.0.0.1",
      "127.255.255.254",
      "0.0.0.0",
      "0.1.2.3",
      "10.0.0.1",
      "10.255.255.255",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "100.127.255.255",
      "192.0.0.8",
      "192.0.2.1",
      "198.18.0.1",
      "198.51.100.7",
      "203.0.113.9",
      "224.0.0.1",
      "239.255.255.250",
      "240.0.0.1",
      "255.255.255.255",
      "::",
      "::1",
      "0:0:0:0:0:0:0:1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:10.0.0.1",
      "::ffff:169.254.169.254",
      "::ffff:100.64.0.1",
      "::127.0.0.1",
      "fe80::1",
      "fe80::1%eth0",
      "fc00::1",
      "fd12:3456:789a::1",
      "fec0::1",
      "ff02::1",
      "ff05::2",
      "64:ff9b::a00:1",
      "100::1",
      "2001:db8::1",
      "2001::1",
      "2002:7f00:1::1",
      "3fff::1"
    ])
      assert.isFalse(isPublicAddress(ip), ip)
  })

  it("text that is not an address is not public", () => {
    for (const text of [
      "",
      "localhost",
      "example.com",
      "127.1",
      "0x7f000001",
      "2130706433",
      "[::1]",
      "1.2.3.4:80"
    ])
      assert.isFalse(isPublicAddress(text), text)
  })
})
