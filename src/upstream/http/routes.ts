import { Effect, Exit, Option, Result, Schema } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { isMethod, type Method, methodPlatform, type UpstreamFaults, withFaults } from "../Upstream.ts"
import type { World } from "../world/index.ts"
import { argsSchemas } from "./args.ts"
import { encodeResult, FaultsPatch, isObject, readArgs } from "./wire.ts"

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers })

const badRequest = (message: string) => json({ error: "bad_request", message }, 400)

/** The JSON body, or undefined when there is none or it is not JSON. */
const bodyOf = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(Effect.option(request.json), Option.getOrUndefined)

const decodeArgs = (method: Method, args: ReadonlyArray<unknown>) =>
  Schema.decodeUnknownResult(argsSchemas[method] as Schema.Decoder<ReadonlyArray<unknown>>)(readArgs(args))

const invoke = (world: World, method: Method, args: ReadonlyArray<unknown>): unknown =>
  (world[method] as (...input: ReadonlyArray<unknown>) => unknown)(...args)

/**
 * The simulated world over the upstream provider contract, with its fault knobs applied to every
 * call and settable at run time through `GET`/`POST /faults`.
 */
export const upstreamRoutes = (world: World, faults: UpstreamFaults["Service"]) => {
  const call = Effect.fn("UpstreamServer.call")(function* (request: HttpServerRequest.HttpServerRequest) {
    const { method } = yield* HttpRouter.params
    if (method === undefined || !isMethod(method)) {
      return json({ error: "unknown_method", message: `No upstream method ${method}.` }, 404)
    }
    const body = yield* bodyOf(request)
    if (!isObject(body) || !Array.isArray(body.args)) return badRequest('The body must be {"args": [...]}.')
    const args = decodeArgs(method, body.args)
    if (Result.isFailure(args)) return badRequest(`Invalid arguments for ${method}: ${args.failure.message}`)
    const platform = methodPlatform[method]
    const answer = yield* Effect.exit(
      withFaults(
        yield* faults.get,
        platform,
        Effect.sync(() => invoke(world, method, args.success))
      )
    )
    if (Exit.isSuccess(answer)) return json(encodeResult(answer.value))
    return Option.match(Exit.findErrorOption(answer), {
      onNone: () => json({ error: "internal" }, 500),
      onSome: ({ reason, retryAfterSeconds }) =>
        json({ error: reason, platform }, 503, { "retry-after": String(retryAfterSeconds) })
    })
  })

  const setFaults = Effect.fn("UpstreamServer.setFaults")(function* (
    request: HttpServerRequest.HttpServerRequest
  ) {
    const patch = Schema.decodeUnknownResult(FaultsPatch)(yield* bodyOf(request))
    if (Result.isFailure(patch)) return badRequest(`Invalid faults patch: ${patch.failure.message}`)
    return json(yield* faults.set(patch.success))
  })

  return HttpRouter.use((router) =>
    Effect.gen(function* () {
      yield* router.add("GET", "/healthz", json({ status: "ok" }))
      yield* router.add(
        "GET",
        "/faults",
        Effect.map(faults.get, (current) => json(current))
      )
      yield* router.add("POST", "/faults", setFaults)
      yield* router.add("POST", "/v1/call/:method", call)
      yield* router.add("*", "/*", json({ error: "not_found" }, 404))
    })
  )
}
