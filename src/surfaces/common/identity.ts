import { Context, Effect, Layer, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import { AppConfig } from "../../config.ts"
import { KeyRequired, Unauthorized } from "../../contract/errors.ts"
import type { Account, KeyRecord } from "../../domain/accounts.ts"
import { clientIp } from "../../domain/clientIp.ts"
import { spendKeyPattern } from "../../domain/secrets.ts"
import { noteAccount } from "../../logging.ts"
import { Accounts } from "../../services/Accounts.ts"

/** The account and key a bearer credential stands for. */
export interface Principal {
  readonly key: KeyRecord
  readonly account: Account
}

/**
 * One family of bearer credentials. Spend keys today; management tokens and OAuth access tokens
 * plug in as further resolvers. The first resolver that claims a secret's shape decides.
 */
export interface BearerResolver {
  readonly family: string
  readonly claims: (secret: string) => boolean
  readonly resolve: (secret: string) => Effect.Effect<Principal, Unauthorized>
}

const inactive = (message: string) => new Unauthorized({ message })

/** `svc_...` and `svc_trial_...` keys: unknown, revoked and suspended are UNAUTHORIZED. */
const spendKeys = (accounts: typeof Accounts.Service): BearerResolver => ({
  family: "spend key",
  claims: (secret) => spendKeyPattern.test(secret),
  resolve: (secret) =>
    Effect.gen(function* () {
      const found = yield* Effect.orDie(accounts.findByKey(secret))
      if (found === undefined || found.key.revoked)
        return yield* inactive("This key is not active. Mint a new key or recover the account.")
      if (found.account.state !== "active") return yield* inactive("The account of this key is suspended.")
      return found
    })
})

/**
 * Who is calling, resolved the same way for every surface (REST, MCP): the principal behind the
 * bearer credential, and the client's address (the socket peer, or behind trusted proxies the
 * right-most forwarded address that is not one of them).
 */
export class Identity extends Context.Service<
  Identity,
  {
    readonly authenticate: (secret: string) => Effect.Effect<Principal, KeyRequired | Unauthorized>
    readonly clientIp: (request: HttpServerRequest.HttpServerRequest) => string
  }
>()("app/Identity") {
  static readonly layer = Layer.effect(
    Identity,
    Effect.gen(function* () {
      const accounts = yield* Accounts
      const { trustedProxies } = yield* AppConfig
      const resolvers: ReadonlyArray<BearerResolver> = [spendKeys(accounts)]

      const authenticate = Effect.fn("Identity.authenticate")(function* (secret: string) {
        if (secret.length === 0) {
          return yield* new KeyRequired({
            message:
              "No key was sent. Mint a free trial key with POST /v1/keys/mint (no body, no auth) and send it as `Authorization: Bearer <key>`."
          })
        }
        const resolver = resolvers.find((candidate) => candidate.claims(secret))
        if (resolver === undefined) {
          return yield* new Unauthorized({
            message: "The key is not a spend key of this service (expected svc_... or svc_trial_...)."
          })
        }
        const principal = yield* resolver.resolve(secret)
        yield* noteAccount(principal.account.id)
        return principal
      })

      return Identity.of({
        authenticate,
        clientIp: (request) =>
          clientIp(
            Option.getOrElse(request.remoteAddress, () => "0.0.0.0"),
            request.headers["x-forwarded-for"],
            trustedProxies
          )
      })
    })
  )
}
