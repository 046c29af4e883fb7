import { HttpServerResponse } from "effect/http"
import { links } from "../../config.ts"
import type { KeyRequired, Unauthorized } from "../../contract/errors.ts"
import type { Problems } from "../common/problems.ts"

/** RFC 9728: a resource's metadata lives at the well-known prefix followed by the resource's path. */
export const protectedResourcePath = (resourcePath: string): `/${string}` =>
  `/.well-known/oauth-protected-resource${resourcePath}`

export const protectedResourceMetadata = (baseUrl: string, resourcePath: string, resourceName: string) => ({
  resource: `${baseUrl}${resourcePath}`,
  // `authorization_servers` joins here once the service runs its own OAuth authorization server
  // (spec rule 9: MCP clients sign in with an emailed code); until then keys go in the header.
  bearer_methods_supported: ["header"],
  resource_name: resourceName,
  resource_documentation: links(baseUrl).docs
})

/**
 * 401 for a missing or unusable bearer: RFC 9728's challenge pointing at the mount's metadata
 * (`error="invalid_token"` only when a credential was sent), with REST's problem as the body,
 * so a client without OAuth support still learns how to mint a key.
 */
export const challengeResponse = (
  problems: typeof Problems.Service,
  error: KeyRequired | Unauthorized,
  metadataUrl: string
) =>
  problems
    .render(error)
    .pipe(
      HttpServerResponse.setHeader(
        "www-authenticate",
        error._tag === "KeyRequired"
          ? `Bearer resource_metadata="${metadataUrl}"`
          : `Bearer error="invalid_token", resource_metadata="${metadataUrl}"`
      )
    )
