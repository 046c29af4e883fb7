import { HttpServerResponse } from "effect/http"
import { links } from "../../config.ts"
import type { AuthRequired, KeyRequired, Unauthorized } from "../../contract/errors.ts"
import type { Problems } from "../common/problems.ts"

/** RFC 9728: a resource's metadata lives at the well-known prefix followed by the resource's path. */
export const protectedResourcePath = (resourcePath: string): `/${string}` =>
  `/.well-known/oauth-protected-resource${resourcePath}`

/**
 * The service is its own authorization server (spec rule 9: MCP clients sign in in a browser with an
 * emailed code); its issuer is the base URL. `mcp` is the scope a client asks for.
 */
export const protectedResourceMetadata = (baseUrl: string, resourcePath: string, resourceName: string) => ({
  resource: `${baseUrl}${resourcePath}`,
  authorization_servers: [baseUrl],
  scopes_supported: ["mcp"],
  bearer_methods_supported: ["header"],
  resource_name: resourceName,
  resource_documentation: links(baseUrl).docs
})

/**
 * RFC 6750's `error_description` allows only printable ASCII without `"` and `\`, so a value built
 * from free text cannot break out of the quoted string (or the header).
 */
export const quotedStringSafe = (text: string) =>
  text
    .replace(/[^\x20-\x7e]|["\\]/g, " ")
    .replace(/ {2,}/g, " ")
    .trim()

/**
 * How to get a key, in the challenge itself: a client that cannot do OAuth (no browser, no
 * support for it) prints the challenge's `error_description`, never the body.
 */
export const mintRecipe = (baseUrl: string) =>
  `Mint a free trial key with curl -X POST ${baseUrl}/v1/keys/mint (no body, no auth), then add the HTTP header Authorization: Bearer <key> to this MCP server's configuration. Docs: ${links(baseUrl).docs}`

/**
 * 401 for a missing or unusable bearer: RFC 9728's challenge pointing at the mount's metadata
 * (`error="invalid_token"` only when a credential was sent) and the mint recipe as
 * `error_description`, with REST's problem as the body. RFC 6750 would leave error information out
 * of a challenge to a request without credentials; the description is kept there on purpose,
 * because that keyless first contact is exactly who needs the recipe.
 */
export const challengeResponse = (
  problems: typeof Problems.Service,
  error: KeyRequired | Unauthorized | AuthRequired,
  baseUrl: string,
  metadataUrl: string
) => {
  const description = quotedStringSafe(
    error._tag === "KeyRequired"
      ? `No key was sent. ${mintRecipe(baseUrl)}`
      : `${error.message} ${mintRecipe(baseUrl)}`
  )
  const params = [
    ...(error._tag === "KeyRequired" ? [] : ['error="invalid_token"']),
    `error_description="${description}"`,
    `resource_metadata="${metadataUrl}"`
  ]
  return problems
    .render(error)
    .pipe(HttpServerResponse.setHeader("www-authenticate", `Bearer ${params.join(", ")}`))
}
