/** How long the authorization server's artifacts live. */
export const oauthPolicy = {
  accessTokenTtlSeconds: 3600,
  /** A refresh token (rotated at each use) and the grant behind it: 90 days without use. */
  refreshTokenTtlSeconds: 90 * 24 * 3600,
  /** `last_used_at` of an app moves at most once a minute. */
  lastUsedResolutionMs: 60_000,
  /** Dynamic registrations per client address: each one is a stored client that never expires. */
  registrationsPerIp: { limit: 10, window: "1 hour" }
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
