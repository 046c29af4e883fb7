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
