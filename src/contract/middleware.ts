import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import type { Account, KeyRecord } from "../domain/accounts.ts"

/** The middleware every group of the contract uses, and what they provide to handlers. */

/** The authenticated caller of a spend-key route. */
export class Caller extends Context.Service<
  Caller,
  { readonly key: KeyRecord; readonly account: Account; readonly ip: string }
>()("contract/Caller") {}

/** Client IP of any route (socket, or trusted X-Forwarded-For). */
export class ClientIp extends Context.Service<ClientIp, string>()("contract/ClientIp") {}

/**
 * `Authorization: Bearer <key>`. Declared with the lower-case scheme name OpenAPI registers
 * (`HttpApiSecurity.bearer` says "Bearer", which docs renderers do not recognise and so offer Basic);
 * the header's scheme is matched case-insensitively either way.
 */
const spendKey = HttpApiSecurity.http({ scheme: "bearer" }).pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "A spend key. Mint a free trial key with `POST /v1/keys/mint` (no body, no auth)."
  )
)

export class SpendKeyAuth extends HttpApiMiddleware.Service<
  SpendKeyAuth,
  { provides: Caller; requires: ClientIp }
>()("contract/SpendKeyAuth", { security: { bearer: spendKey } }) {}

export class Client extends HttpApiMiddleware.Service<Client, { provides: ClientIp }>()("contract/Client") {}

/** Turns request decoding failures into INVALID_INPUT problems naming the parameter. */
export class InputProblems extends HttpApiMiddleware.Service<InputProblems>()("contract/InputProblems") {}

/**
 * Refuses control characters in path and query parameters (INVALID_INPUT naming the parameter).
 * Innermost on every group, so that as for any malformed parameter authentication answers first.
 */
export class PlainInput extends HttpApiMiddleware.Service<PlainInput>()("contract/PlainInput") {}
