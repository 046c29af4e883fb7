import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { makeWorld } from "../../src/upstream/world/index.ts"
import { paidKey } from "./accounts.ts"
import { TestApp, testSeed } from "./app.ts"

const world = makeWorld(testSeed)

/** The public profiles (their slugs) a people search of the test world for `keywords` finds. */
export const profileSlugs = (keywords: string): ReadonlyArray<string> => {
  const page = world.searchPeople({ keywords }, undefined, 30)
  if (page === "invalid_cursor") throw new Error("unexpected")
  return page.items.filter((item) => item.public_identifier !== null).map((item) => item.public_identifier!)
}

/** The slugs one at a time, round and round. */
export const slugCycle = (slugs: ReadonlyArray<string>) => {
  let next = 0
  return () => slugs[next++ % slugs.length]!
}

export const profilePath = (slug: string) => `/v1/profnet/profiles?identifier=${slug}`

/**
 * A production account with `credits` purchased, on an address of `freshIp`: its calls (a new
 * Idempotency-Key each unless given) and its purchased balance as `GET /v1/usage` reports it.
 */
export const paidCaller = (freshIp: () => string) => (credits: number) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const minted = yield* paidKey(freshIp(), credits, "production")
    const call = (path: string, idempotencyKey: string = crypto.randomUUID()) =>
      app.call(path, { key: minted.key, ip: minted.ip, idempotencyKey })
    const purchased = Effect.map(
      app.call("/v1/usage", { key: minted.key, ip: minted.ip }),
      (reply) => reply.body.balance.purchased as number
    )
    return { ...minted, call, purchased }
  })

/** A profile in the shared cache: fetched once live by another account. */
export const warmedProfile = (nextSlug: () => string, paid: ReturnType<typeof paidCaller>) =>
  Effect.gen(function* () {
    const slug = nextSlug()
    const other = yield* paid(100)
    const first = yield* other.call(profilePath(slug))
    assert.strictEqual(first.body.freshness.served, "realtime")
    return slug
  })
