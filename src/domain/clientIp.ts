import { isIPv4, isIPv6 } from "node:net"

/** Trusted-proxy matching for `X-Forwarded-For`: exact addresses or CIDR ranges, IPv4 and IPv6. */
const toBits = (address: string): { readonly bits: bigint; readonly width: number } | undefined => {
  const plain = address.startsWith("::ffff:") && isIPv4(address.slice(7)) ? address.slice(7) : address
  if (isIPv4(plain)) {
    return { bits: plain.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n), width: 32 }
  }
  if (!isIPv6(plain)) return undefined
  const [head = "", tail = ""] = plain.split("::")
  const headParts = head === "" ? [] : head.split(":")
  const tailParts = plain.includes("::") ? (tail === "" ? [] : tail.split(":")) : []
  const fill = new Array(8 - headParts.length - tailParts.length).fill("0")
  const parts = plain.includes("::") ? [...headParts, ...fill, ...tailParts] : headParts
  return {
    bits: parts.reduce((acc, part) => (acc << 16n) | BigInt(Number.parseInt(part, 16)), 0n),
    width: 128
  }
}

export const normalizeIp = (address: string): string =>
  address.startsWith("::ffff:") && isIPv4(address.slice(7)) ? address.slice(7) : address

export const matchesRange = (address: string, range: string): boolean => {
  const [base = "", prefixText] = range.split("/")
  const target = toBits(address)
  const net = toBits(base)
  if (target === undefined || net === undefined || target.width !== net.width) return false
  const prefix = prefixText === undefined ? net.width : Number(prefixText)
  const shift = BigInt(net.width - prefix)
  return target.bits >> shift === net.bits >> shift
}

/** The client is the socket peer, or behind trusted proxies the right-most forwarded address not in the list. */
export const clientIp = (
  socketAddress: string,
  forwardedFor: string | undefined,
  trusted: ReadonlyArray<string>
): string => {
  const isTrusted = (address: string) => trusted.some((range) => matchesRange(address, range))
  const peer = normalizeIp(socketAddress)
  if (forwardedFor === undefined || !isTrusted(peer)) return peer
  const hops = forwardedFor
    .split(",")
    .map((hop) => normalizeIp(hop.trim()))
    .filter((hop) => hop.length > 0)
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!
    if (!isTrusted(hop)) return hop
  }
  return hops[0] ?? peer
}
