import { Cause, Clock, Context, Data, Deferred, Effect, Exit, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { UpstreamUnavailable } from "../contract/errors.ts"
import type { Freshness, Served } from "../domain/freshness.ts"
import { recordCacheLookup } from "../observability/metrics.ts"
import * as Row from "../store/rows.ts"
import type { UpstreamFailure } from "../upstream/Upstream.ts"
import { Settings } from "./Settings.ts"

/**
 * A speculative run of an operation: before any credit moves, the metered path runs the operation
 * on stored copies only. A copy that would need a live fetch stops it (`CacheMiss`, a defect the
 * path catches, then it runs the call the full way); writes a run makes that belong to a charged
 * call (a domain it resolved) wait in `afterCharge` and happen only once the call is charged.
 */
export interface Speculation {
  readonly afterCharge: Array<Effect.Effect<void>>
}

export const Speculating = Context.Reference<Speculation | undefined>("services/Cache/Speculating", {
  defaultValue: () => undefined
})

/** The speculative run needed a live fetch. */
export class CacheMiss extends Data.TaggedError("CacheMiss") {}

/** A stored copy: the upstream value wrapped as `{ v }` in JSON (what the value is, the operation knows). */
const decodeCopies = Row.decoder(
  Schema.Struct({
    body: Schema.fromJsonString(Schema.Struct({ v: Schema.optionalKey(Schema.Unknown) })),
    fetched_at: Row.Int,
    size: Row.Int
  }),
  "cache_entries"
)

interface Copy {
  readonly value: unknown
  readonly fetchedAt: number
  /** The stored body's length, what the copy counts against the memory bound. */
  readonly size: number
}

/**
 * The copies young enough to serve `recent`, in memory in front of the database: least recently
 * used first out once they hold more than `maxBytes` (counted as their stored JSON's length).
 */
const copiesInMemory = (maxBytes: number) => {
  const copies = new Map<string, Copy>()
  let bytes = 0
  const drop = (key: string) => {
    const copy = copies.get(key)
    if (copy === undefined) return
    copies.delete(key)
    bytes -= copy.size
  }
  return {
    get: (key: string): Copy | undefined => {
      const copy = copies.get(key)
      if (copy === undefined) return undefined
      copies.delete(key)
      copies.set(key, copy)
      return copy
    },
    set: (key: string, copy: Copy) => {
      drop(key)
      if (copy.size > maxBytes / 8) return
      copies.set(key, copy)
      bytes += copy.size
      for (const oldest of copies.keys()) {
        if (bytes <= maxBytes) break
        drop(oldest)
      }
    },
    drop
  }
}

export interface Fetched<A> {
  readonly value: A
  readonly served: Served
  readonly fetchedAt: number
}

/**
 * Upstream copies in the database, shared by every instance. `recent` serves a copy younger than
 * 6 hours, else fetches live; `realtime` always fetches live and, when the platform cannot answer
 * (or live fetching is paused), falls back to the newest copy of the last 7 days. Concurrent
 * misses for one key on one instance share a single live fetch.
 */
export class Cache extends Context.Service<
  Cache,
  {
    readonly through: <A>(
      key: string,
      freshness: Freshness,
      live: Effect.Effect<A, UpstreamFailure>
    ) => Effect.Effect<Fetched<A>, UpstreamUnavailable>
    readonly purgeExpired: Effect.Effect<void>
  }
>()("services/Cache") {
  static readonly layer = Layer.effect(
    Cache,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const settings = yield* Settings
      const { cacheRecentMs: recentMs, cacheKeepMs: keepMs } = (yield* AppConfig).policy
      const { cacheMemoryBytes } = (yield* AppConfig).policy
      const inFlight = new Map<string, Deferred.Deferred<unknown, UpstreamFailure>>()
      const memory = copiesInMemory(cacheMemoryBytes)

      const readStored = (key: string) =>
        sql`
            SELECT body, fetched_at, length(body) AS size FROM cache_entries WHERE cache_key = ${key}`.pipe(
          Effect.flatMap(decodeCopies),
          Effect.map((rows) =>
            rows[0] === undefined
              ? undefined
              : { value: rows[0].body.v, fetchedAt: rows[0].fetched_at, size: rows[0].size }
          ),
          Effect.orDie
        )

      /** The copy in memory when it can serve `recent`, else the stored one (kept in memory if it can). */
      const read = (key: string, now: number) =>
        Effect.suspend(() => {
          const held = memory.get(key)
          if (held !== undefined) {
            if (now - held.fetchedAt < recentMs) return Effect.succeed<Copy | undefined>(held)
            memory.drop(key)
          }
          return Effect.map(readStored(key), (copy) => {
            if (copy !== undefined && now - copy.fetchedAt < recentMs) memory.set(key, copy)
            return copy
          })
        })

      const write = (key: string, value: unknown, now: number) => {
        const body = JSON.stringify({ v: value })
        return sql`INSERT INTO cache_entries (cache_key, body, fetched_at) VALUES (${key}, ${body}, ${now})
          ON CONFLICT (cache_key) DO UPDATE SET body = EXCLUDED.body, fetched_at = EXCLUDED.fetched_at`.pipe(
          Effect.orDie,
          Effect.map(() => memory.set(key, { value, fetchedAt: now, size: body.length }))
        )
      }

      /**
       * One live fetch per key at a time on this instance; later callers await the first. The
       * fetch stays interruptible (a shutdown past its grace stops it); when the first caller is
       * interrupted, the others fetch again instead of inheriting its interruption.
       */
      const singleFlight = <A>(
        key: string,
        live: Effect.Effect<A, UpstreamFailure>
      ): Effect.Effect<A, UpstreamFailure> =>
        Effect.suspend(() => {
          const pending = inFlight.get(key)
          if (pending !== undefined)
            return Effect.flatMap(Effect.exit(Deferred.await(pending)), (exit) =>
              Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
                ? singleFlight(key, live)
                : (exit as Exit.Exit<A, UpstreamFailure>)
            )
          return Effect.uninterruptibleMask((restore) =>
            Effect.gen(function* () {
              const deferred = yield* Deferred.make<unknown, UpstreamFailure>()
              inFlight.set(key, deferred)
              const exit = yield* Effect.exit(restore(live))
              inFlight.delete(key)
              yield* Deferred.done(deferred, exit)
              return yield* exit
            })
          )
        })

      // A young copy is answered by a chain, not a generator: it is every cache hit's way (see the
      // README, "No generator suspended under another on the way in").
      const through = <A>(key: string, freshness: Freshness, live: Effect.Effect<A, UpstreamFailure>) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.flatMap(read(key, now), (copy) =>
            freshness === "recent" && copy !== undefined && now - copy.fetchedAt < recentMs
              ? hit<A>(copy)
              : beyondCopy(key, freshness, live, now, copy)
          )
        )

      // hot path
      const hit = <A>(copy: Copy): Effect.Effect<Fetched<A>> => {
        recordCacheLookup(true)
        return Effect.succeed<Fetched<A>>({
          value: copy.value as A,
          served: "recent",
          fetchedAt: copy.fetchedAt
        })
      }

      /** No young copy: a live fetch, or an older copy as the fallback of a realtime call. */
      const beyondCopy = <A>(
        key: string,
        freshness: Freshness,
        live: Effect.Effect<A, UpstreamFailure>,
        now: number,
        copy: Copy | undefined
      ) =>
        Effect.gen(function* () {
          // A speculative run serves stored copies only.
          if ((yield* Speculating) !== undefined) return yield* Effect.die(new CacheMiss())
          recordCacheLookup(false)
          const paused = (yield* Effect.orDie(settings.current)).livePaused
          const fetched = paused
            ? Exit.fail<UpstreamFailure | "paused">("paused")
            : yield* Effect.exit(singleFlight(key, live))
          // A defect in the fetcher is ours, not the platform's: it surfaces as INTERNAL.
          if (Exit.isFailure(fetched) && Option.isNone(Cause.findErrorOption(fetched.cause))) {
            return yield* Effect.failCause(fetched.cause as Cause.Cause<never>)
          }
          if (Exit.isSuccess(fetched)) {
            yield* write(key, fetched.value, now)
            return { value: fetched.value, served: "realtime", fetchedAt: now } satisfies Fetched<A>
          }
          if (freshness === "realtime" && copy !== undefined && now - copy.fetchedAt < keepMs) {
            return {
              value: copy.value as A,
              served: "cached_fallback",
              fetchedAt: copy.fetchedAt
            } satisfies Fetched<A>
          }
          const failure = Option.getOrUndefined(Cause.findErrorOption(fetched.cause))
          const retryAfter = typeof failure === "object" ? failure.retryAfterSeconds : 60
          return yield* new UpstreamUnavailable({
            message: paused
              ? "Live fetching is paused by the operator and no usable cached copy exists. Nothing was charged; retry later."
              : "The platform could not be reached and no usable cached copy exists. Nothing was charged; retry after retry_after_seconds.",
            retry_after_seconds: retryAfter
          })
        })

      const purgeExpired = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        yield* sql`DELETE FROM cache_entries WHERE fetched_at < ${now - keepMs}`.pipe(Effect.orDie)
      })

      return Cache.of({ through, purgeExpired })
    })
  )
}
