import { BlockList, isIPv4 } from "node:net"
import { canonicalIp } from "./clientIp.ts"

/**
 * Which addresses the service may connect to when a caller names a URL (a client's metadata
 * document, a webhook): public unicast only. Anything that reaches the service's own machine, its
 * network or a special-purpose range (IANA's special-purpose registries) is refused, whatever its
 * spelling (an IPv4-mapped IPv6 address is judged as the IPv4 address it maps).
 */

const ipv4NotPublic: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (cloud metadata services)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4] // reserved, and the broadcast address
]

/** IPv6 is public only inside global unicast (2000::/3), and not in its special-purpose blocks. */
const ipv6NotPublic: ReadonlyArray<readonly [string, number]> = [
  ["2001::", 23], // IETF protocol assignments (Teredo among them)
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4: an IPv4 address inside, not vetted here
  ["3fff::", 20] // documentation
]

const refused = new BlockList()
for (const [network, prefix] of ipv4NotPublic) refused.addSubnet(network, prefix, "ipv4")
for (const [network, prefix] of ipv6NotPublic) refused.addSubnet(network, prefix, "ipv6")
const globalUnicast = new BlockList()
globalUnicast.addSubnet("2000::", 3, "ipv6")

/**
 * Is `ip` (an IPv4 or IPv6 address, no port or brackets) a public unicast address? False for
 * loopback, private, link-local, unspecified, carrier-grade NAT, multicast, documentation and
 * other special-purpose addresses, for their IPv4-mapped forms, and for text that is not an address.
 */
export const isPublicAddress = (ip: string): boolean => {
  const canonical = canonicalIp(ip)
  if (canonical === undefined) return false
  if (isIPv4(canonical)) return !refused.check(canonical, "ipv4")
  return globalUnicast.check(canonical, "ipv6") && !refused.check(canonical, "ipv6")
}
