/** The small part of oidc-provider 9.13 (which ships no types) that the service uses. */
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http"

  export interface ProviderClient {
    readonly clientId: string
    readonly clientName?: string
    readonly redirectUris?: ReadonlyArray<string>
    readonly grantTypeAllowed: (type: string) => boolean
  }

  export interface ProviderGrant {
    readonly jti: string
    readonly accountId: string
    readonly clientId: string
    addOIDCScope(scope: string): void
    addResourceScope(resource: string, scope: string): void
    save(): Promise<string>
  }

  export interface InteractionDetails {
    readonly uid: string
    readonly grantId?: string
    readonly params: Record<string, unknown>
    readonly prompt: { readonly name: string; readonly details: Record<string, unknown> }
    readonly session?: { readonly accountId?: string }
  }

  export interface StoredAccessToken {
    readonly jti: string
    readonly accountId: string
    readonly clientId: string
    readonly grantId: string
    readonly aud?: string | ReadonlyArray<string>
    readonly scope?: string
  }

  export interface KoaContext {
    readonly path: string
    readonly method: string
    readonly req: IncomingMessage
    query: Record<string, string | ReadonlyArray<string> | undefined>
    /** The request's OIDC context, once the library has read its parameters. */
    readonly oidc?: { readonly params?: Record<string, unknown> }
    readonly response: { get(name: string): string; is(type: string): string | false }
    set(name: string, value: string): void
    remove(name: string): void
  }

  export class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>)
    proxy: boolean
    readonly issuer: string
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>
    use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void
    on(event: string, listener: (...args: ReadonlyArray<unknown>) => void): void
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>
    interactionResult(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { readonly mergeWithLastSubmission?: boolean }
    ): Promise<string>
    readonly Client: { find(id: string): Promise<ProviderClient | undefined> }
    readonly Grant: {
      new (fields: { readonly accountId: string; readonly clientId: string }): ProviderGrant
      find(id: string): Promise<ProviderGrant | undefined>
    }
    readonly AccessToken: { find(token: string): Promise<StoredAccessToken | undefined> }
  }

  export const errors: {
    readonly OIDCProviderError: new (
      status: number,
      error: string
    ) => Error & { error_description?: string; allow_redirect: boolean }
    readonly InvalidTarget: new (description?: string) => Error
    /** A description starting `redirect_uris` makes it `invalid_redirect_uri` (RFC 7591). */
    readonly InvalidClientMetadata: new (
      description: string
    ) => Error
    readonly InvalidClient: new (description?: string, detail?: string) => Error
  }

  export default Provider
}
