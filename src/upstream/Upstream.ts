import { Context, Data, Duration, Effect, Layer, Random, Ref } from "effect"
import { defaultHosts, type Hosts } from "../domain/identifiers/hosts.ts"
import type { Platform } from "../domain/plans.ts"
import {
  type Answer,
  type Args,
  type Implementation,
  type ImplementsUpstream,
  type Method,
  methodPlatform
} from "./methods.ts"
import { makeWorld, type World } from "./world/index.ts"

export { type Answer, type Args, isMethod, type Method, methodPlatform, upstreamMethods } from "./methods.ts"

/** The platform could not answer: unreachable, timed out, failing, paused or in outage. */
export class UpstreamFailure extends Data.TaggedError("UpstreamFailure")<{
  readonly platform: Platform
  readonly reason: "unreachable" | "timeout" | "error" | "outage" | "paused" | "circuit_open" | "bad_response"
  readonly retryAfterSeconds: number
}> {}

export class Upstream extends Context.Service<
  Upstream,
  {
    readonly call: <M extends Method>(
      method: M,
      ...args: Args<M>
    ) => Effect.Effect<Answer<M>, UpstreamFailure>
  }
>()("upstream/Upstream") {}

/** Fault knobs of the simulated world, settable at run time by tests and the operator. */
export interface Faults {
  readonly latencyMs: { readonly min: number; readonly max: number }
  /** Probability (0 to 1) that a call fails with a 5xx-like error. */
  readonly errorRate: number
  readonly outage: boolean
  readonly paused: ReadonlyArray<Platform>
}

export const noFaults: Faults = { latencyMs: { min: 0, max: 0 }, errorRate: 0, outage: false, paused: [] }

export class UpstreamFaults extends Context.Service<
  UpstreamFaults,
  { readonly get: Effect.Effect<Faults>; readonly set: (patch: Partial<Faults>) => Effect.Effect<Faults> }
>()("upstream/UpstreamFaults") {
  static readonly layer = Layer.effect(
    UpstreamFaults,
    Effect.map(Ref.make(noFaults), (ref) =>
      UpstreamFaults.of({
        get: Ref.get(ref),
        set: (patch) => Ref.updateAndGet(ref, (faults) => ({ ...faults, ...patch }))
      })
    )
  )
}

/** Applies the fault knobs to one call of `platform`, then runs it. */
export const withFaults = <A>(
  faults: Faults,
  platform: Platform,
  run: Effect.Effect<A, UpstreamFailure>
): Effect.Effect<A, UpstreamFailure> =>
  Effect.gen(function* () {
    if (faults.outage)
      return yield* new UpstreamFailure({ platform, reason: "outage", retryAfterSeconds: 30 })
    if (faults.paused.includes(platform)) {
      return yield* new UpstreamFailure({ platform, reason: "paused", retryAfterSeconds: 60 })
    }
    const { min, max } = faults.latencyMs
    if (max > 0) yield* Effect.sleep(Duration.millis(min + (yield* Random.next) * Math.max(0, max - min)))
    if (faults.errorRate > 0 && (yield* Random.next) < faults.errorRate) {
      return yield* new UpstreamFailure({ platform, reason: "error", retryAfterSeconds: 5 })
    }
    return yield* run
  })

type Assert<T extends true> = T
/** Fails the typecheck when the world lacks a method or mistypes one. */
export type WorldImplementsUpstream = Assert<ImplementsUpstream<World>>

/** The world's methods as the declaration types them; the assignment is checked above, strictly. */
export const worldMethods = (world: World): Implementation => world

/**
 * The deterministic simulated world, answering in process, its URLs on `hosts` (the service's
 * configured hosts, so that they resolve). Its answers are not decoded: they are typed against the
 * declaration, and a test encodes samples of every method with its schemas.
 */
export const layerWorld = (seed: string | number, hosts: Hosts = defaultHosts) =>
  Layer.effect(
    Upstream,
    Effect.gen(function* () {
      const world = worldMethods(makeWorld(seed, hosts))
      const faults = yield* UpstreamFaults
      return Upstream.of({
        call: (method, ...args) =>
          Effect.flatMap(faults.get, (current) =>
            withFaults(
              current,
              methodPlatform[method],
              Effect.sync(() => world[method](...args))
            )
          )
      })
    })
  )
