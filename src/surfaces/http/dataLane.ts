import { Effect, Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { AppConfig } from "../../config.ts"
import type { Api } from "../../contract/api.ts"
import { controlCharacterInput } from "../../contract/controlCharacters.ts"
import type { AnyOperation } from "../../operations/Operation.ts"
import { Identity } from "../common/identity.ts"
import { announcedBodyTooLarge } from "../common/limits.ts"
import { invalidInputFromSchemaError, Problems } from "../common/problems.ts"
import { answerDataCall, type DataRequest } from "./dataRoutes.ts"
import { callerOf, noStore } from "./middleware.ts"
import { parseQuery } from "./queryString.ts"

/**
 * The hot path of a REST data call: a plain `GET /v1/<platform>/<operation>` with a bearer
 * credential is answered here, before the router, by the very steps the HttpApi route takes and in
 * its order (the `Client`, `InputProblems`, `SpendKeyAuth` and `PlainInput` middleware, the header
 * and query decoding with the endpoint's own schemas, then `answerDataCall`), without building the
 * route's layers of middleware per request. Anything else (another method or path shape, no
 * credential, a path with escapes, a `;` or `#` separator) is `undefined` and left to the router,
 * which answers it as before. test/http/dataLane.test.ts sends the same requests both ways and
 * compares the answers.
 */
export const dataLane = <R>(api: Api<AnyOperation<R>>, operations: ReadonlyArray<AnyOperation<R>>) =>
  Effect.gen(function* () {
    const problems = yield* Problems
    const identity = yield* Identity
    const { maxBodyBytes } = yield* AppConfig
    const groups = api.groups as Record<string, { readonly endpoints: Record<string, Endpoint> }>
    const routes = new Map<string, Route<R>>(
      operations.map((operation) => {
        const endpoint = groups[operation.platform]!.endpoints[operation.id]!
        // As HttpApiBuilder decodes them; the contract sets no parse options.
        const headers = Schema.decodeUnknownEffect(endpoint.headers) as Route<R>["headers"]
        const query = Schema.decodeUnknownEffect(
          Schema.toCodecArrayFromSingle(endpoint.query)
        ) as Route<R>["query"]
        return [`/v1${operation.path}`, { operation, headers, query }] as const
      })
    )

    // Chained, not a generator: V8 promotes what a generator suspended under another one holds to
    // the old generation, so a request's objects would outlive it until the next full collection.
    const answer = (
      request: HttpServerRequest.HttpServerRequest,
      route: Route<R>,
      credential: string,
      querystring: string
    ) =>
      Effect.suspend(() => {
        const tooLarge = announcedBodyTooLarge(request.headers, maxBodyBytes)
        if (tooLarge !== undefined) return Effect.succeed(problems.render(tooLarge))
        const ip = identity.clientIp(request)
        return Effect.flatMap(
          Effect.result(callerOf(identity, credential, route.operation.platform, ip)),
          (caller) => {
            if (caller._tag === "Failure") return Effect.succeed(problems.render(caller.failure))
            const query = parseQuery(querystring)
            const refused = controlCharacterInput(query)
            if (refused !== undefined) return Effect.succeed(problems.render(refused))
            return Effect.flatMap(
              Effect.result(
                Effect.all([
                  HttpApiError.HttpApiSchemaError.wrap("Headers", route.headers(request.headers)),
                  HttpApiError.HttpApiSchemaError.wrap("Query", route.query(query))
                ])
              ),
              (decoded) => {
                if (decoded._tag === "Failure")
                  return Effect.succeed(problems.render(invalidInputFromSchemaError(decoded.failure)))
                const [headers, params] = decoded.success as [DataRequest["headers"], DataRequest["query"]]
                return answerDataCall(problems, route.operation, caller.success, { query: params, headers })
              }
            )
          }
        )
      }).pipe(Effect.map(noStore), Effect.interruptible)

    return (request: HttpServerRequest.HttpServerRequest) => {
      if (request.method !== "GET") return undefined
      const url = request.url
      const end = url.search(/[?;#]/)
      const route = routes.get(end === -1 ? url : url.slice(0, end))
      if (route === undefined || (end !== -1 && url.charCodeAt(end) !== 63)) return undefined
      const credential = bearerCredential(request.headers.authorization)
      if (credential === undefined) return undefined
      return answer(request, route, credential, end === -1 ? "" : url.slice(end + 1))
    }
  })

interface Route<R> {
  readonly operation: AnyOperation<R>
  readonly headers: (input: unknown) => Effect.Effect<unknown, Schema.SchemaError>
  readonly query: (input: unknown) => Effect.Effect<unknown, Schema.SchemaError>
}

interface Endpoint {
  readonly headers: Schema.Top
  readonly query: Schema.Top
}

/**
 * The credential of `Authorization: Bearer <credential>` as HttpApi reads it (RFC 9110 11.1: the
 * scheme in any case, then one or more spaces), or `undefined` for any other header.
 */
const bearerCredential = (authorization: string | undefined): string | undefined => {
  if (authorization === undefined || authorization.length <= 6 || authorization.charCodeAt(6) !== 32)
    return undefined
  if (authorization.slice(0, 6).toLowerCase() !== "bearer") return undefined
  let start = 7
  while (authorization.charCodeAt(start) === 32) start++
  return start === authorization.length ? undefined : authorization.slice(start)
}
