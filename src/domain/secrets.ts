import { hash } from "node:crypto"

/** Spend keys (`svc_`, trial `svc_trial_`) and management tokens (`svcm_`): formats and hashing. */
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

export const encodeBase62 = (bytes: Uint8Array): string => {
  let out = ""
  for (const byte of bytes) out += base62[byte % 62]
  return out
}

/**
 * What every surface answers for a bearer that is none of the service's credentials, whatever it
 * looks like (`svc_trial_bogus`, `garbage`): REST, MCP and the claim page say the same.
 */
export const unrecognizedBearer =
  "This is not a credential of this service: a key is svc_trial_ or svc_ followed by 32 letters and digits, whole as it was shown when it was made; an app's access token works on /mcp only, until it expires or the app is disconnected."

export const spendKeyPattern = /^svc_(trial_)?[0-9A-Za-z]{32}$/
export const managementTokenPattern = /^svcm_[0-9A-Za-z]{32}$/

export const makeSpendKey = (random: Uint8Array, trial: boolean): string =>
  `${trial ? "svc_trial_" : "svc_"}${encodeBase62(random).slice(0, 32)}`

/** Secrets are 190 bits of randomness, so a fast unsalted hash is enough to make storage useless to a thief. */
export const hashSecret = (secret: string): string => hash("sha256", secret, "hex")

export const hintOf = (secret: string): string =>
  `${secret.slice(0, secret.lastIndexOf("_") + 1)}...${secret.slice(-4)}`

/** The shortest operator token (ADMIN_TOKEN, METRICS_TOKEN) the service starts with. */
export const operatorTokenMinLength = 32

/**
 * Why `token` (the value of the variable `name`) is too weak to guard an operator surface, in one
 * sentence, or undefined: at least 32 characters, and not a few characters repeated (at least 10
 * different ones). The service generates ADMIN_TOKEN when it is unset; METRICS_TOKEN is chosen.
 */
export const operatorTokenWeakness = (name: string, token: string): string | undefined => {
  if (token.length < operatorTokenMinLength)
    return `${name} is ${token.length} character${token.length === 1 ? "" : "s"} long; it must be at least ${operatorTokenMinLength} random characters (for example \`openssl rand -hex 32\`)${name === "ADMIN_TOKEN" ? ", or leave it unset to have one generated" : ""}.`
  if (new Set(token).size < 10)
    return `${name} repeats a few characters; it must be at least ${operatorTokenMinLength} random characters (for example \`openssl rand -hex 32\`).`
  return undefined
}
