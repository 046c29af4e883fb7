import { Clock, Context, Effect, Layer, Option, Result } from "effect"
import type { HttpServerRequest } from "effect/http"
import { AppConfig } from "../config.ts"
import { AuthRequired, KeyRequired, Unauthorized } from "../contract/errors.ts"
import type { Account, KeyRecord } from "../domain/accounts.ts"
import { clientIp, perIpKey } from "../domain/clientIp.ts"
import { hashSecret, managementTokenPattern, spendKeyPattern, unrecognizedBearer } from "../domain/secrets.ts"
import { identityPolicy } from "../domain/signIn.ts"
import { noteAccount } from "../logging.ts"
import { OAuthServer } from "../oauth/OAuthServer.ts"
import { Accounts } from "../services/Accounts.ts"
import { KeyMemory, type Remembered } from "../services/KeyMemory.ts"
import { type Governor, ManagementTokens } from "../services/ManagementTokens.ts"
import type { Unconfirmed } from "./types.ts"

/** The account and key a bearer credential stands for. */
export interface Principal {
  readonly key: KeyRecord
  readonly account: Account
  /**
   * Set only by `Bearers.authenticateToCharge`, on a spend key taken from this instance's memory
   * before the reports committed before the request were applied (`KeyMemory.peek`). Only a cache
   * hit's charge may act on it as it is (the charge checks `versions`); anything else confirms it
   * first (`meterDataCall`).
   */
  readonly unconfirmed?: Unconfirmed
}

/** Where a bearer is presented: an MCP mount's URL, which an OAuth access token must be for. */
export interface BearerContext {
  readonly resource?: string | undefined
}

/** What a bearer stands for: whom data calls run as (or why it cannot spend), and a management identity. */
export interface ResolvedBearer {
  readonly principal: Result.Result<Principal, AuthRequired | Unauthorized>
  /** The identity behind a management token. */
  readonly governor: Governor | undefined
}

/**
 * One family of bearer credentials: spend keys, management tokens, OAuth access tokens. The first
 * resolver that claims a secret (by its shape, and where it is presented) decides.
 */
interface BearerResolver {
  readonly family: string
  readonly claims: (secret: string, context: BearerContext) => boolean
  readonly resolve: (secret: string, context: BearerContext) => Effect.Effect<ResolvedBearer, Unauthorized>
  /** As `resolve`, but a principal from memory may come unconfirmed (`Principal.unconfirmed`). */
  readonly resolveToCharge?: (
    secret: string,
    context: BearerContext
  ) => Effect.Effect<ResolvedBearer, Unauthorized>
}

const spending = (principal: Principal): ResolvedBearer => ({
  principal: Result.succeed(principal),
  governor: undefined
})

const inactive = (message: string) => new Unauthorized({ message })

/** `svc_...` and `svc_trial_...` keys: unknown, revoked and suspended are UNAUTHORIZED. */
const spendKeys = (accounts: typeof Accounts.Service, memory: typeof KeyMemory.Service): BearerResolver => {
  // The principal, with the key's `last_used_at` written at most once per resolution interval.
  const touched = (entry: Remembered, now: number): Effect.Effect<Principal, Unauthorized> => {
    if (entry.lastUsedAt !== null && now - entry.lastUsedAt < identityPolicy.lastUsedResolutionMs)
      return Effect.succeed(entry.principal)
    entry.lastUsedAt = now
    return Effect.as(Effect.orDie(accounts.touchKey(entry.principal.key.id, now)), entry.principal)
  }
  // Read, and remembered unless something was forgotten during the read.
  const fromDatabase = (
    secret: string,
    hash: string,
    now: number
  ): Effect.Effect<Principal, Unauthorized> => {
    const since = memory.generation()
    return Effect.flatMap(Effect.orDie(accounts.findByKey(secret)), (found) => {
      if (found === undefined || found.key.revoked)
        return Effect.fail(inactive("This key is not active. Mint a new key or recover the account."))
      if (found.account.state !== "active")
        return Effect.fail(inactive("The account of this key is suspended."))
      const fresh: Remembered = {
        principal: { key: found.key, account: found.account },
        lastUsedAt: found.lastUsedAt,
        until: now + identityPolicy.keyMemoryMs,
        versions: found.versions
      }
      memory.remember(hash, fresh, since, now)
      return touched(fresh, now)
    })
  }
  // A remembered principal as it is, with the ways to confirm it.
  const unconfirmed = (secret: string, hash: string, entry: Remembered, now: number) => {
    const read = Effect.suspend(() => fromDatabase(secret, hash, now))
    // Its versions were found changed: what is remembered of the account is out of date.
    const reread = Effect.suspend(() => {
      memory.forget(entry.principal.account.id)
      return fromDatabase(secret, hash, now)
    })
    return Effect.map(
      touched(entry, now),
      (principal): Principal => ({
        ...principal,
        unconfirmed: {
          versions: entry.versions,
          confirm: Effect.flatMap(memory.confirm(hash, entry, now), (held) =>
            held ? Effect.undefined : read
          ),
          reread
        }
      })
    )
  }
  // hot path: what is remembered, once every report committed before the request is applied.
  const confirmed = (secret: string, hash: string, now: number) => {
    const entry = memory.peek(hash, now)
    return Effect.map(
      entry === undefined
        ? fromDatabase(secret, hash, now)
        : Effect.flatMap(memory.confirm(hash, entry, now), (held) =>
            held ? touched(entry, now) : fromDatabase(secret, hash, now)
          ),
      spending
    )
  }
  return {
    family: "spend key",
    claims: (secret) => spendKeyPattern.test(secret),
    // hot path
    resolve: (secret) =>
      Effect.flatMap(
        Clock.currentTimeMillis,
        (now): Effect.Effect<ResolvedBearer, Unauthorized> => confirmed(secret, hashSecret(secret), now)
      ),
    // hot path
    resolveToCharge: (secret) =>
      Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<ResolvedBearer, Unauthorized> => {
        const hash = hashSecret(secret)
        const entry = memory.peek(hash, now)
        return entry === undefined
          ? confirmed(secret, hash, now)
          : Effect.map(unconfirmed(secret, hash, entry, now), spending)
      })
  }
}

/** The ids a governor may name with `account_id`, in the error that asks for one. */
const chooseAccount = (governor: Governor) =>
  new AuthRequired({
    message: `This management token governs ${governor.accounts.length} accounts (${governor.accounts.map((account) => account.id).join(", ")}): send \`account_id\`, one of account_ids, to say which one to act on, or use a spend key of that account.`,
    account_ids: governor.accounts.map((account) => account.id)
  })

/**
 * `svcm_...` management tokens spend directly when their identity governs exactly one account; the
 * token stands in for a key (its id is the receipt's key).
 */
const managementTokenBearers = (tokens: typeof ManagementTokens.Service): BearerResolver => ({
  family: "management token",
  claims: (secret) => managementTokenPattern.test(secret),
  resolve: (secret) =>
    Effect.gen(function* () {
      const governor = yield* Effect.catchTag(tokens.authenticate(secret), "SqlError", Effect.die)
      return { principal: yield* Effect.result(governedPrincipal(governor)), governor }
    })
})

/**
 * OAuth access tokens (opaque, looked up) on the MCP mount they were issued for: the connected app
 * stands in for a key (its app id is the receipt's `key_id`, so receipts name the app), on the
 * account that consented. Elsewhere (REST) no such token is taken.
 */
const accessTokens = (oauth: typeof OAuthServer.Service): BearerResolver => ({
  family: "OAuth access token",
  claims: (secret, context) => context.resource !== undefined && !secret.startsWith("svc"),
  resolve: (secret, context) =>
    Effect.map(oauth.authenticate(secret, context.resource ?? ""), (holder) =>
      spending({
        key: { id: holder.appId, accountId: holder.account.id, hint: holder.clientName, revoked: false },
        account: holder.account
      })
    )
})

/**
 * The account a management request acts on: the one named by `account_id`, or the only one the
 * identity governs. Another identity's account id is answered like an unknown one.
 */
export const selectAccount = (
  governor: Governor,
  accountId: string | undefined
): Effect.Effect<Account, AuthRequired> => {
  if (accountId === undefined) {
    const only = governor.accounts[0]
    return only !== undefined && governor.accounts.length === 1
      ? Effect.succeed(only)
      : Effect.fail(chooseAccount(governor))
  }
  const chosen = governor.accounts.find((account) => account.id === accountId)
  return chosen === undefined
    ? Effect.fail(
        new AuthRequired({
          message: `This sign-in does not govern ${accountId}; account_ids lists the accounts it governs.`,
          account_ids: governor.accounts.map((account) => account.id)
        })
      )
    : Effect.succeed(chosen)
}

/** Address pairs whose per-IP key is kept in memory (see `clientIp`). */
const ipKeysKept = 10_000

/**
 * Who is calling, resolved the same way for every surface (REST, MCP): the principal behind the
 * bearer credential, and the client's address (the socket peer, or behind trusted proxies the
 * right-most forwarded address that is not one of them).
 */
export class Bearers extends Context.Service<
  Bearers,
  {
    /** What a bearer stands for, by the first resolver that claims it. */
    readonly resolve: (
      secret: string,
      context?: BearerContext
    ) => Effect.Effect<ResolvedBearer, KeyRequired | Unauthorized>
    /** The principal a bearer spends as, or why it cannot. */
    readonly authenticate: (
      secret: string,
      context?: BearerContext
    ) => Effect.Effect<Principal, KeyRequired | Unauthorized | AuthRequired>
    /**
     * As `authenticate`, for a metered data call only (`meterDataCall`): a spend key remembered by
     * this instance comes at once, unconfirmed (`Principal.unconfirmed`).
     */
    readonly authenticateToCharge: (
      secret: string,
      context?: BearerContext
    ) => Effect.Effect<Principal, KeyRequired | Unauthorized | AuthRequired>
    /**
     * The identity behind a management route's bearer: a management token only. A spend key (or
     * nothing) is AUTH_REQUIRED with the way to sign in.
     */
    readonly governor: (secret: string) => Effect.Effect<Governor, Unauthorized | AuthRequired>
    /** The client's address: the socket peer, or behind trusted proxies the forwarded one. */
    readonly clientAddress: (request: HttpServerRequest.HttpServerRequest) => string
    /**
     * The client as every per-IP rule counts it (`perIpKey`): the IPv4 address, or the IPv6
     * network of `IPV6_PREFIX_BITS`.
     */
    readonly clientIp: (request: HttpServerRequest.HttpServerRequest) => string
  }
>()("identity/Bearers") {
  static readonly layer = Layer.effect(
    Bearers,
    Effect.gen(function* () {
      const accounts = yield* Accounts
      const managementTokens = yield* ManagementTokens
      const oauth = yield* OAuthServer
      const { trustedProxies, baseUrl, ipv6PrefixBits } = yield* AppConfig
      const memory = yield* KeyMemory
      const resolvers: ReadonlyArray<BearerResolver> = [
        spendKeys(accounts, memory),
        managementTokenBearers(managementTokens),
        accessTokens(oauth)
      ]

      const governor = Effect.fn("Bearers.governor")(function* (secret: string) {
        if (!managementTokenPattern.test(secret)) {
          return yield* new AuthRequired({
            message: `${secret.length === 0 ? "No management token was sent" : "A spend key cannot manage an account"}. Sign in with your email to get a management token (svcm_...): POST /v1/auth/email/start, or ${baseUrl}/login in a browser.`
          })
        }
        const found = yield* Effect.catchTag(managementTokens.authenticate(secret), "SqlError", Effect.die)
        yield* noteAccount(found.accounts.length === 1 ? found.accounts[0]!.id : found.tokenId)
        return found
      })

      // hot path
      const resolveAs = (
        secret: string,
        context: BearerContext,
        toCharge: boolean
      ): Effect.Effect<ResolvedBearer, KeyRequired | Unauthorized> => {
        if (secret.length === 0) {
          return Effect.fail(
            new KeyRequired({
              message:
                "No key was sent. Mint a free trial key with POST /v1/keys/mint (no body, no auth) and send it as `Authorization: Bearer <key>`."
            })
          )
        }
        const resolver = resolvers.find((candidate) => candidate.claims(secret, context))
        if (resolver === undefined) {
          return Effect.fail(new Unauthorized({ message: unrecognizedBearer }))
        }
        const resolved =
          toCharge && resolver.resolveToCharge !== undefined
            ? resolver.resolveToCharge(secret, context)
            : resolver.resolve(secret, context)
        return Effect.tap(resolved, (found) =>
          noteAccount(
            Result.isSuccess(found.principal)
              ? found.principal.success.account.id
              : (found.governor?.tokenId ?? "")
          )
        )
      }

      const resolve = (secret: string, context: BearerContext = {}) => resolveAs(secret, context, false)

      // hot path
      const principalOf = (
        found: ResolvedBearer
      ): Effect.Effect<Principal, KeyRequired | Unauthorized | AuthRequired> =>
        Result.isSuccess(found.principal)
          ? Effect.succeed(found.principal.success)
          : Effect.fail(found.principal.failure)
      const authenticate = (secret: string, context: BearerContext = {}) =>
        Effect.flatMap(resolveAs(secret, context, false), principalOf)
      const authenticateToCharge = (secret: string, context: BearerContext = {}) =>
        Effect.flatMap(resolveAs(secret, context, true), principalOf)

      const clientAddress = (request: HttpServerRequest.HttpServerRequest) =>
        clientIp(
          Option.getOrElse(request.remoteAddress, () => "0.0.0.0"),
          request.headers["x-forwarded-for"],
          trustedProxies
        )

      // hot path: a connection sends many requests from one address (and one proxy chain), so the
      // per-IP key of each pair is kept, up to `ipKeysKept` pairs (then forgotten all at once).
      const ipKeys = new Map<string, string>()
      const ipKeyOf = (request: HttpServerRequest.HttpServerRequest) => {
        const remote = Option.getOrElse(request.remoteAddress, () => "")
        const forwarded = request.headers["x-forwarded-for"]
        const pair = forwarded === undefined ? remote : `${remote} ${forwarded}`
        const known = ipKeys.get(pair)
        if (known !== undefined) return known
        const key = perIpKey(clientAddress(request), ipv6PrefixBits)
        if (ipKeys.size >= ipKeysKept) ipKeys.clear()
        ipKeys.set(pair, key)
        return key
      }

      return Bearers.of({
        resolve,
        authenticate,
        authenticateToCharge,
        governor,
        clientAddress,
        clientIp: ipKeyOf
      })
    })
  )
}

/**
 * The principal a management token spends as (spec rule 3): only when its identity governs exactly
 * one account, which must be active; the token stands in for a key (its id is the receipt's key).
 * Several accounts are AUTH_REQUIRED listing them, as for any management request without
 * `account_id`.
 */
export const governedPrincipal = (governor: Governor) =>
  Effect.gen(function* () {
    const account = yield* selectAccount(governor, undefined)
    if (account.state !== "active") return yield* inactive("The account of this sign-in is suspended.")
    const principal: Principal = {
      key: { id: governor.tokenId, accountId: account.id, hint: governor.hint, revoked: false },
      account
    }
    return principal
  })
