import { createHash, randomInt } from "node:crypto"
import type { StartLimits } from "./policy.ts"
import { encodeBase62 } from "./secrets.ts"

/**
 * Bearers and sign-in: email addresses, one-time codes, link tokens and device codes, with the
 * numbers that govern them (sign-in, command-line sign-in, recovery).
 */

const minute = 60_000
const hour = 60 * minute
const day = 24 * hour

export const identityPolicy = {
  /** Sign-in codes and links: 10 minutes (the limits on starts and wrong tries are in `Policy`). */
  signInTtlMs: 10 * minute,
  managementTokenTtlMs: 90 * day,
  recoveryTtlMs: hour,
  deviceTtlMs: 10 * minute,
  deviceIntervalMs: 5_000,
  /** RFC 8628 3.5: each `slow_down` adds 5 seconds to the interval. */
  deviceSlowDownMs: 5_000,
  exchangeTtlMs: 5 * minute,
  /** Revoked keys stay in the list this long. */
  revokedKeysListedMs: 30 * day,
  /** A token's `last_used_at` is written at most this often. */
  lastUsedResolutionMs: minute,
  /**
   * A spend key's account stays in memory at most this long (the bound on staleness should a change
   * notification be lost without the listener noticing); changes are otherwise applied at commit.
   */
  keyMemoryMs: 5_000,
  /** Spend keys remembered per instance. */
  keyMemoryEntries: 50_000
} as const

/** Address syntax only (a confirmed email is proven by the code, not by this). At most 254 characters. */
const emailPattern =
  /^[^\s@"<>(),;:\\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/

/** The stored form of an email (trimmed, lower-cased), or `undefined` when it is not an address. */
export const normalizeEmail = (input: string): string | undefined => {
  const email = input.trim().toLowerCase()
  return email.length <= 254 && emailPattern.test(email) ? email : undefined
}

/** Providers that deliver `f.arm@` to `farm@`, each with the domain its mailboxes are named by. */
const dotBlindDomains: Readonly<Record<string, string>> = {
  "gmail.com": "gmail.com",
  "googlemail.com": "gmail.com"
}

/**
 * The mailbox a stored address delivers to, as far as the one-time grant is concerned (once per
 * mailbox, so that `farm+1@`, `farm+2@` and `f.arm@` are one person): lower case, the local part
 * without its `+tag`, and at the providers that ignore dots (gmail.com and googlemail.com, which
 * are one) without dots. Only the grant asks this: identities, sign-ins and accounts keep the
 * address as typed (lower-cased), and mail goes there.
 */
export const mailboxOf = (email: string): string => {
  const at = email.lastIndexOf("@")
  const domain = email.slice(at + 1).toLowerCase()
  const local = email.slice(0, at).toLowerCase().split("+")[0]!
  const dotBlind = dotBlindDomains[domain]
  return dotBlind === undefined ? `${local}@${domain}` : `${local.replaceAll(".", "")}@${dotBlind}`
}

/** A 6-digit code, uniform over 000000..999999. */
export const makeSignInCode = (): string => String(randomInt(0, 1_000_000)).padStart(6, "0")

export const signInCodePattern = /^\d{6}$/

/** A link or device secret: 43 base62 characters (about 256 bits before the modulo). */
export const makeLinkToken = (random: Uint8Array): string => encodeBase62(random).slice(0, 43)

export const linkTokenPattern = /^[0-9A-Za-z]{43}$/

/** RFC 8628 6.1: letters without vowels or look-alikes, `BCDF-GHJK`. */
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

export const makeUserCode = (): string => {
  let code = ""
  for (let index = 0; index < 8; index++) code += userCodeAlphabet[randomInt(0, userCodeAlphabet.length)]
  return `${code.slice(0, 4)}-${code.slice(4)}`
}

/** What a person types: any case, with or without the dash or spaces. */
export const normalizeUserCode = (input: string): string | undefined => {
  const letters = input.toUpperCase().replace(/[\s-]/g, "")
  return letters.length === 8 && [...letters].every((letter) => userCodeAlphabet.includes(letter))
    ? `${letters.slice(0, 4)}-${letters.slice(4)}`
    : undefined
}

/** Codes are short, so their hash is keyed by what they belong to (the sign-in's id). */
export const hashCode = (scope: string, code: string): string =>
  createHash("sha256").update(`${scope}:${code}`).digest("hex")

/** A loopback redirect URI (RFC 8252 7.3): http, 127.0.0.1, [::1] or localhost, any port. */
export const isLoopbackRedirect = (uri: string): boolean => {
  try {
    const url = new URL(uri)
    return (
      url.protocol === "http:" &&
      (url.hostname === "127.0.0.1" || url.hostname === "[::1]" || url.hostname === "localhost") &&
      url.username === "" &&
      url.password === "" &&
      url.hash === ""
    )
  } catch {
    return false
  }
}

/**
 * The windows of a start (sign-in or recovery) for `email` from client `ip` (its per-IP key): the
 * client's own, the client's for this email, and the email's ceiling over all clients.
 */
export const startWindows = (prefix: string, rules: StartLimits, email: string, ip: string) => [
  { key: `${prefix}-ip:${ip}`, rule: rules.perIp },
  // An address has no ':', so the client's key and the address cannot run into each other.
  { key: `${prefix}-email-ip:${ip}:${email}`, rule: rules.perEmailIp },
  { key: `${prefix}-email:${email}`, rule: rules.perEmail }
]
