import { Effect, Exit, Option, Result, Schema } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { FaultsPatch } from "../../contract/faults.ts"
import { type Implementation, isMethod, type Method, methodPlatform, upstreamMethods } from "../methods.ts"
import { type UpstreamFaults, withFaults, worldMethods } from "../Upstream.ts"
import type { World } from "../world/index.ts"
import { isObject } from "./wire.ts"

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers })

const badRequest = (message: string) => json({ error: "bad_request", message }, 400)

/** The JSON body, or undefined when there is none or it is not JSON. */
const bodyOf = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(Effect.option(request.json), Option.getOrUndefined)

/**
 * One call of `method`: its arguments decoded with the method's args schema (400 when they do not
 * match), run under the fault knobs, and its answer encoded with the answer schema for the wire.
 */
const answerCall = <M extends Method>(
  world: Implementation,
  faults: UpstreamFaults["Service"],
  method: M,
  wireArgs: ReadonlyArray<unknown>
) =>
  Effect.gen(function* () {
    const declared = upstreamMethods[method]
    const args = Schema.decodeUnknownResult(declared.args)(wireArgs)
    if (Result.isFailure(args)) return badRequest(`Invalid arguments for ${method}: ${args.failure.message}`)
    const platform = methodPlatform[method]
    const answer = yield* Effect.exit(
      withFaults(
        yield* faults.get,
        platform,
        Effect.flatMap(
          Effect.sync(() => world[method](...args.success)),
          // An answer outside its declaration is the world's bug: a defect, answered 500.
          (value) => Effect.orDie(Schema.encodeEffect(declared.answer)(value))
        )
      )
    )
    if (Exit.isSuccess(answer)) return json({ result: answer.value })
    return Option.match(Exit.findErrorOption(answer), {
      onNone: () => json({ error: "internal" }, 500),
      onSome: ({ reason, retryAfterSeconds }) =>
        json({ error: reason, platform }, 503, { "retry-after": String(retryAfterSeconds) })
    })
  })

/**
 * The simulated world over the upstream provider contract, with its fault knobs applied to every
 * call and settable at run time through `GET`/`POST /faults`.
 */
export const upstreamRoutes = (world: World, faults: UpstreamFaults["Service"]) => {
  const methods = worldMethods(world)
  const call = Effect.fn("UpstreamServer.call")(function* (request: HttpServerRequest.HttpServerRequest) {
    const { method } = yield* HttpRouter.params
    if (method === undefined || !isMethod(method)) {
      return json({ error: "unknown_method", message: `No upstream method ${method}.` }, 404)
    }
    const body = yield* bodyOf(request)
    if (!isObject(body) || !Array.isArray(body.args)) return badRequest('The body must be {"args": [...]}.')
    return yield* answerCall(methods, faults, method, body.args)
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
