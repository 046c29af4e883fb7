import Provider from "oidc-provider"
import { type ConfigurationInput, configuration, defaultScope, formPostPolicy } from "./configuration.ts"

/**
 * oidc-provider configured for this service. Loaded on the first OAuth request (a dynamic import
 * from `OAuthServer`): the library and its dependencies are a large part of a process that serves
 * only keys otherwise.
 */
export const makeProvider = (
  issuer: string,
  input: ConfigurationInput,
  onServerError: (error: unknown) => void
): Provider => {
  const provider = new Provider(issuer, configuration(input))
  provider.proxy = true
  provider.use(formPostPolicy)
  provider.use(defaultScope)
  provider.on("server_error", (_ctx, error) => onServerError(error))
  return provider
}
