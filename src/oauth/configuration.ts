import { errors, type KoaContext, type ProviderClient } from "oidc-provider"
import { contentSecurityPolicy } from "../domain/html.ts"
import { mcpScope, oauthPolicy, oauthRoutes, redirectUriRefusal, scopes } from "./policy.ts"

/**
 * The authorization server's settings (oidc-provider 9.13): authorization code with PKCE S256 only,
 * each MCP mount a resource (RFC 8707) with opaque access tokens looked up in the database, rotating
 * refresh tokens, dynamic registration and Client ID Metadata Documents, DPoP off, every TTL set.
 */

export interface ConfigurationInput {
  readonly adapter: unknown
  readonly signingKey: Record<string, unknown>
  readonly cookieKeys: ReadonlyArray<string>
  /** The MCP mounts' URLs: the only resources a token may be for. */
  readonly resources: ReadonlySet<string>
  readonly renderError: (ctx: { type: string; body: string }, out: Record<string, string>) => void
  /** Every request to a URL a client named (`clientFetch`). */
  readonly fetch: (url: string | URL, init?: RequestInit) => Promise<Response>
  /** May this request fetch the Client ID Metadata Document `clientId` (the cache missed)? */
  readonly clientFetchAllowed: (ctx: KoaContext | undefined, clientId: string) => Promise<ClientFetchVerdict>
  readonly clientDocuments: {
    readonly maxBytes: number
    readonly cacheMinSeconds: number
    readonly cacheMaxSeconds: number
  }
}

/**
 * `Allowed`; `Again` when this request fetched this document already and failed (the library looks
 * the client up a second time to word its error: no second connection); `Limited` past the per-IP
 * limit, with why.
 */
export type ClientFetchVerdict =
  | { readonly _tag: "Allowed" }
  | { readonly _tag: "Again" }
  | { readonly _tag: "Limited"; readonly message: string }

export const configuration = (input: ConfigurationInput): Record<string, unknown> => ({
  adapter: input.adapter,
  clients: [],
  fetch: input.fetch,
  fetchResponseBodyLimits: {
    "client_id metadata document": input.clientDocuments.maxBytes,
    jwks_uri: input.clientDocuments.maxBytes,
    sector_identifier_uri: input.clientDocuments.maxBytes
  },
  jwks: { keys: [input.signingKey] },
  cookies: {
    keys: input.cookieKeys,
    long: { signed: true, httpOnly: true, sameSite: "lax" },
    short: { signed: true, httpOnly: true, sameSite: "lax" }
  },
  routes: oauthRoutes,
  // Our own pages; the library's cookies are scoped to this path, so every step stays under it.
  interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/login/${interaction.uid}` },
  responseTypes: ["code"],
  pkce: { required: () => true },
  scopes,
  claims: { openid: ["sub"] },
  clientDefaults: {
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    // With only an ES256 key, registration fails unless ID tokens default to it too.
    id_token_signed_response_alg: "ES256"
  },
  allowOmittingSingleRegisteredRedirectUri: false,
  // Every client's metadata passes here, registered (RFC 7591) or fetched (a Client ID Metadata
  // Document), and again whenever a stored one is loaded.
  extraClientMetadata: { properties: ["redirect_uris"], validator: checkClientMetadata },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    // Documents are fetched through `input.fetch`, at most so many per client address, and kept
    // (the library's cache) for their max-age within these bounds.
    clientIdMetadataDocument: {
      enabled: true,
      ack: "draft-02",
      allowFetch: async (ctx: KoaContext | undefined, clientId: string) => {
        const verdict = await input.clientFetchAllowed(ctx, clientId)
        if (verdict._tag !== "Limited") return verdict._tag === "Allowed"
        // Past the per-IP limit: a 429 `temporarily_unavailable`, never a redirect to the client.
        throw Object.assign(new errors.OIDCProviderError(429, "temporarily_unavailable"), {
          error_description: verdict.message,
          allow_redirect: false
        })
      },
      cacheDuration: {
        min: input.clientDocuments.cacheMinSeconds,
        max: input.clientDocuments.cacheMaxSeconds
      }
    },
    revocation: { enabled: true },
    introspection: { enabled: false },
    userinfo: { enabled: false },
    rpInitiatedLogout: { enabled: false },
    dPoP: { enabled: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx: unknown, _client: unknown, oneOf: string | undefined) => oneOf,
      // A refresh may omit `resource`: the grant's one is used.
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx: unknown, resource: string) => {
        if (!input.resources.has(resource))
          throw new errors.InvalidTarget("resource must be one of this service's MCP endpoints")
        return {
          scope: mcpScope,
          audience: resource,
          accessTokenFormat: "opaque",
          accessTokenTTL: oauthPolicy.accessTokenTtlSeconds
        }
      }
    }
  },
  // Every client that may refresh gets a refresh token (no `offline_access` ceremony); each use
  // rotates it.
  issueRefreshToken: (_ctx: unknown, client: ProviderClient) => client.grantTypeAllowed("refresh_token"),
  rotateRefreshToken: () => true,
  // The subject is an account id: a grant is one account's consent to one client.
  findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub }) }),
  ttl: {
    AccessToken: oauthPolicy.accessTokenTtlSeconds,
    AuthorizationCode: 60,
    ClientCredentials: 600,
    DeviceCode: 600,
    BackchannelAuthenticationRequest: 600,
    IdToken: 3600,
    RefreshToken: oauthPolicy.refreshTokenTtlSeconds,
    Interaction: 3600,
    Session: 14 * 24 * 3600,
    Grant: oauthPolicy.refreshTokenTtlSeconds,
    PreAuthorizedCode: 600
  },
  renderError: (ctx: { type: string; body: string }, out: Record<string, string>) =>
    input.renderError(ctx, out)
})

/** A client's redirect URIs follow `redirectUriRefusal` (invalid_redirect_uri otherwise). */
const checkClientMetadata = (
  _ctx: unknown,
  key: string,
  value: unknown,
  metadata: Record<string, unknown>
) => {
  if (key !== "redirect_uris") return
  for (const uri of Array.isArray(value) ? value : []) {
    const refusal = redirectUriRefusal(String(uri), metadata.application_type)
    if (refusal !== undefined) throw new errors.InvalidClientMetadata(`redirect_uris: ${refusal}`)
  }
}

/**
 * The library's `response_mode=form_post` answer is a page whose inline script posts a form to the
 * client's redirect URI. The library adds its script's hash to a `script-src` it finds (seeded
 * with `'report-sample'`, which allows nothing by itself); its policy then allows that script and
 * that one form target. Every other page of the library keeps the default policy, which the Node
 * response adds (`HardenedResponse`).
 */
export const formPostPolicy = async (ctx: KoaContext, next: () => Promise<void>) => {
  ctx.set("content-security-policy", contentSecurityPolicy({ scripts: ["'report-sample'"] }))
  await next()
  const scripts = ctx.response.get("content-security-policy").match(/'sha256-[^']+'/g) ?? []
  const target = URL.parse(String(ctx.oidc?.params?.redirect_uri ?? ""))
  if (scripts.length > 0 && target !== null && ctx.response.is("html"))
    ctx.set("content-security-policy", contentSecurityPolicy({ scripts, formTargets: [target.origin] }))
  else ctx.remove("content-security-policy")
}

/** An authorization request without `scope` would end in `access_denied`: it asks for `mcp`. */
export const defaultScope = async (ctx: KoaContext, next: () => Promise<void>) => {
  if (ctx.path === oauthRoutes.authorization && ctx.method === "GET" && ctx.query.scope === undefined) {
    ctx.query = { ...ctx.query, scope: mcpScope }
  }
  await next()
}
