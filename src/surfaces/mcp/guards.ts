import {
  localhostAllowedHostnames,
  validateHostHeader,
  validateOriginHeader
} from "@modelcontextprotocol/server"
import type { Headers } from "effect/http"
import { HttpServerResponse } from "effect/http"

/** Hostnames an MCP request may name in `Host` and `Origin`: BASE_URL's and the loopback names. */
export const allowedHostnames = (baseUrl: string) => [
  ...new Set([new URL(baseUrl).hostname, ...localhostAllowedHostnames()])
]

/**
 * DNS-rebinding protection with the SDK's validators (port-agnostic: a rebinding attacker controls
 * the name, not the port). Refusals are the SDK's own answer: 403 with a JSON-RPC error.
 */
export const foreignHostRejection = (headers: Headers.Headers, allowed: ReadonlyArray<string>) => {
  const host = validateHostHeader(headers.host, [...allowed])
  const checked = host.ok ? validateOriginHeader(headers.origin, [...allowed]) : host
  if (checked.ok) return undefined
  return HttpServerResponse.jsonUnsafe(
    { jsonrpc: "2.0", error: { code: -32000, message: checked.message }, id: null },
    { status: 403 }
  )
}

/** How many accepted Host and Origin pairs a guard remembers (clients use a handful). */
const rememberedPairs = 256

/**
 * `foreignHostRejection` for one set of allowed names, remembering the Host and Origin pairs it
 * accepted so that a known pair is not parsed again on every request.
 */
export const hostGuard = (allowed: ReadonlyArray<string>) => {
  const accepted = new Set<string>()
  return (headers: Headers.Headers) => {
    const pair = `${headers.host ?? ""}\n${headers.origin ?? "\n"}`
    if (accepted.has(pair)) return undefined
    const refused = foreignHostRejection(headers, allowed)
    if (refused === undefined && accepted.size < rememberedPairs) accepted.add(pair)
    return refused
  }
}
