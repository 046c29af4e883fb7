import { isIPv4, isIPv6 } from "node:net"

/**
 * Client addresses for the per-IP free budget and mint limit. Every address is keyed in one
 * canonical text (IPv4 dotted quad; IPv6 in RFC 5952 form; IPv4-mapped IPv6 as IPv4), so two
 * spellings of one address can never hold two budgets.
 */
interface Ip {
  readonly version: 4 | 6
  readonly bits: bigint
}

const v4Bits = (text: string): bigint =>
  text.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n)

/** Eight 16-bit groups of a valid IPv6 text (zone already removed), an IPv4 tail counting as two. */
const v6Bits = (text: string): bigint => {
  const lastColon = text.lastIndexOf(":")
  const tail = text.slice(lastColon + 1)
  const hasV4Tail = tail.includes(".")
  const hex = hasV4Tail ? text.slice(0, lastColon + 1) + "0:0" : text
  const [head = "", rest] = hex.split("::")
  const headGroups = head === "" ? [] : head.split(":")
  const tailGroups = rest === undefined || rest === "" ? [] : rest.split(":")
  const fill =
    rest === undefined ? [] : new Array<string>(8 - headGroups.length - tailGroups.length).fill("0")
  const bits = [...headGroups, ...fill, ...tailGroups].reduce(
    (acc, group) => (acc << 16n) | BigInt(Number.parseInt(group, 16)),
    0n
  )
  return hasV4Tail ? (bits & ~0xffffffffn) | v4Bits(tail) : bits
}

const mappedPrefix = 0xffffn << 32n

/** A bare address (no port, no brackets); IPv4-mapped IPv6 is read as the IPv4 address it maps. */
const parseIp = (text: string): Ip | undefined => {
  if (isIPv4(text)) return { version: 4, bits: v4Bits(text) }
  const address = text.split("%")[0]!
  if (!isIPv6(text) || !isIPv6(address)) return undefined
  const bits = v6Bits(address)
  return bits >> 32n === mappedPrefix >> 32n ? { version: 4, bits: bits & 0xffffffffn } : { version: 6, bits }
}

/** RFC 5952: lower-case hex without leading zeros, the longest run (two or more) of zero groups as `::`. */
const formatIp = (ip: Ip): string => {
  if (ip.version === 4) return [24n, 16n, 8n, 0n].map((shift) => String((ip.bits >> shift) & 0xffn)).join(".")
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) => Number((ip.bits >> shift) & 0xffffn))
  let best = { start: -1, length: 1 }
  for (let start = 0; start < 8; start++) {
    let length = 0
    while (start + length < 8 && groups[start + length] === 0) length++
    if (length > best.length) best = { start, length }
  }
  const hex = groups.map((group) => group.toString(16))
  if (best.start < 0) return hex.join(":")
  return `${hex.slice(0, best.start).join(":")}::${hex.slice(best.start + best.length).join(":")}`
}

/** The canonical text of an address, or undefined when `text` is not one. */
export const canonicalIp = (text: string): string | undefined => {
  const ip = parseIp(text)
  return ip === undefined ? undefined : formatIp(ip)
}

const hopIp = (hop: string): Ip | undefined => {
  const text = hop.trim()
  // Brackets (optionally with a port) hold an IPv6 literal only.
  const bracketed = /^\[([^\]]*:[^\]]*)\](?::\d{1,5})?$/.exec(text)
  if (bracketed !== null) return parseIp(bracketed[1]!)
  const withPort = /^([\d.]+):\d{1,5}$/.exec(text)
  return parseIp(withPort === null ? text : withPort[1]!)
}

/**
 * One `X-Forwarded-For` hop as a canonical address: `1.2.3.4`, `1.2.3.4:80`, `2001:db8::1`,
 * `[2001:db8::1]` or `[2001:db8::1]:443`. Anything else (`1.2.3.4.x`, `unknown`, a host name) is undefined.
 */
export const forwardedAddress = (hop: string): string | undefined => {
  const ip = hopIp(hop)
  return ip === undefined ? undefined : formatIp(ip)
}

/** Does `ip` fall in `range`, an exact address or a CIDR block (`10.0.0.0/8`, `fd00::/8`)? */
const inRange = (ip: Ip, range: string): boolean => {
  const [base = "", prefixText] = range.split("/")
  const net = parseIp(base)
  if (net === undefined || net.version !== ip.version) return false
  const width = ip.version === 4 ? 32 : 128
  const prefix = prefixText === undefined ? width : Number(prefixText)
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > width) return false
  const shift = BigInt(width - prefix)
  return ip.bits >> shift === net.bits >> shift
}

export const matchesRange = (address: string, range: string): boolean => {
  const ip = parseIp(address)
  return ip !== undefined && inRange(ip, range)
}

/**
 * The client is the socket peer; behind trusted proxies, the right-most forwarded address not in
 * the list. Hops are read from the right (the nearest proxy's entry first). A hop that is not an
 * address ends the walk and the nearest address inward of it stands (the trusted proxy that
 * forwarded it, or the socket peer): text a client forged, or a proxy's `unknown`, cannot name a
 * client of its own, so it cannot open a budget of its own either.
 */
export const clientIp = (
  socketAddress: string,
  forwardedFor: string | undefined,
  trusted: ReadonlyArray<string>
): string => {
  const peer = parseIp(socketAddress)
  // The peer comes from the kernel; a non-IP peer (a Unix socket) keeps its own text.
  if (peer === undefined) return socketAddress
  const isTrusted = (ip: Ip) => trusted.some((range) => inRange(ip, range))
  if (forwardedFor === undefined || !isTrusted(peer)) return formatIp(peer)
  const hops = forwardedFor.split(",").filter((hop) => hop.trim().length > 0)
  let client = peer
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hopIp(hops[i]!)
    if (hop === undefined) break
    client = hop
    if (!isTrusted(hop)) break
  }
  return formatIp(client)
}

/**
 * The client as every per-IP rule counts it (mint, the free budget, sign-in and recovery starts,
 * OAuth, checkouts): an IPv4 address by itself, an IPv6 address by its network of `v6PrefixBits`
 * (64 by default, written `2001:db8:1:2::/64`). One IPv6 subscriber is handed at least a /64 and
 * may use any address in it, so counting addresses would give every subscriber 2^64 budgets.
 * Text that is not an address (a Unix socket's peer) stands for itself.
 */
export const perIpKey = (address: string, v6PrefixBits: number): string => {
  const ip = parseIp(address)
  if (ip === undefined || ip.version === 4 || v6PrefixBits >= 128)
    return ip === undefined ? address : formatIp(ip)
  const shift = BigInt(128 - Math.max(0, v6PrefixBits))
  return `${formatIp({ version: 6, bits: (ip.bits >> shift) << shift })}/${v6PrefixBits}`
}
