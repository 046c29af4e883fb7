import type { LimitRule } from "../domain/policy.ts"

/** How long the authorization server's artifacts live. */
export const oauthPolicy = {
  accessTokenTtlSeconds: 3600,
  /** A refresh token (rotated at each use) and the grant behind it: 90 days without use. */
  refreshTokenTtlSeconds: 90 * 24 * 3600,
  /** `last_used_at` of an app moves at most once a minute. */
  lastUsedResolutionMs: 60_000,
  /** Dynamic registrations per client address: each one is a stored client that never expires. */
  registrationsPerIp: { limit: 10, windowMs: 3_600_000 } satisfies LimitRule
} as const

/** Its endpoints, all under `/oauth`; the metadata stays at the RFC 8414 well-known paths. */
export const oauthRoutes = {
  authorization: "/oauth/authorize",
  token: "/oauth/token",
  registration: "/oauth/register",
  revocation: "/oauth/revoke",
  introspection: "/oauth/introspect",
  jwks: "/oauth/jwks",
  end_session: "/oauth/logout",
  userinfo: "/oauth/userinfo",
  pushed_authorization_request: "/oauth/par",
  code_verification: "/oauth/device",
  device_authorization: "/oauth/device/auth",
  backchannel_authentication: "/oauth/backchannel",
  challenge: "/oauth/challenge",
  credential: "/oauth/credential"
} as const

/** The scope an MCP client asks for (named in the protected-resource metadata). */
export const mcpScope = "mcp"
export const scopes = ["openid", "offline_access", mcpScope] as const

/** RFC 8252's loopback hosts, as `URL.hostname` writes them. */
const loopbackHosts = new Set(["127.0.0.1", "[::1]", "localhost"])

/**
 * Why a client may not use `uri` as a redirect URI, or undefined when it may. A web client (every
 * MCP client that does not say `application_type: native`) sends people back over https, or over
 * http to its own machine only (a loopback host, RFC 8252 section 7.3). A native client keeps what
 * oidc-provider allows it: http on loopback, claimed https, or its own custom scheme.
 */
export const redirectUriRefusal = (uri: string, applicationType: unknown): string | undefined => {
  if (applicationType === "native") return undefined
  const url = URL.parse(uri)
  if (url === null) return `${uri} is not a URL`
  if (url.protocol === "https:") return undefined
  if (url.protocol === "http:" && loopbackHosts.has(url.hostname)) return undefined
  return url.protocol === "http:"
    ? `${uri} is plain http on a host that is not loopback; use https, or http on 127.0.0.1, [::1] or localhost`
    : `${uri} is not https (a custom scheme needs application_type "native")`
}
