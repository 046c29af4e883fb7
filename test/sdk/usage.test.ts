import { assert, describe, layer, it as plain } from "@effect/vitest"
import { Effect } from "effect"
import {
  createClient,
  followingOffer,
  InsufficientCredits,
  KeyCapReached,
  SvcClient,
  usageOf
} from "../../src/clients/sdk/index.ts"
import { operations } from "../../src/operations/registry.ts"
import { signIn } from "../identity/support.ts"
import { sampleArguments } from "../mcp/samples.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"

const freshIp = ipSequence("10.74")
const fast = { baseDelayMs: 5, maxDelayMs: 2_000 }
const query = {
  identifier: sampleArguments.getProfile!.identifier as string,
  sections: ["about" as const]
}

const sdk = <A, E>(
  options: { readonly key?: string; readonly managementToken?: string },
  use: (client: SvcClient["Service"]) => Effect.Effect<A, E, SvcClient>
) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    return yield* Effect.flatMap(SvcClient, use).pipe(
      Effect.provide(SvcClient.layer({ baseUrl: app.url, ...options, retry: fast }))
    )
  })

/** A paid account with `credits`, signed in: its first key and its management token. */
const account = (email: string, credits: number) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const ip = freshIp()
    const minted = yield* paidKey(ip, credits)
    const person = yield* Effect.orDie(signIn(app, email, { key: minted.key, ip }))
    return { ...minted, token: person.management_token }
  })

const nextUtcMidnight = () => {
  const now = new Date()
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString()
}

describe("usageOf: the usage headers as numbers", () => {
  plain("reads the rate limit, the credits charged and left, and a key cap's remainder", () => {
    assert.deepStrictEqual(
      usageOf({
        "ratelimit-policy": '"flex";q=600;w=60',
        ratelimit: '"flex";r=599;t=42',
        "credits-charged": "4",
        "credits-remaining": "996",
        "key-cap-remaining": "6"
      }),
      {
        rate_limit: { policy: "flex", limit: 600, window_seconds: 60, remaining: 599, reset_seconds: 42 },
        credits_charged: 4,
        credits_remaining: 996,
        key_cap_remaining: 6
      }
    )
  })

  plain("leaves out what was not sent or cannot be read", () => {
    assert.deepStrictEqual(usageOf({}), {})
    assert.deepStrictEqual(
      usageOf({ "ratelimit-policy": "flex;q=1", ratelimit: '"flex";r=1;t=1', "credits-charged": "-3" }),
      {}
    )
  })
})

describe("the SDK's usage numbers and KeyCapReached against the running service", () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "a capped key's data calls carry their usage; past the cap KeyCapReached, told apart from InsufficientCredits",
      () =>
        Effect.gen(function* () {
          const owner = yield* account("sdk-cap@example.com", 1_000)
          // Both credentials: `updateKey` takes the management token even when a key is set.
          const capped = yield* sdk({ key: owner.key, managementToken: owner.token }, (client) =>
            client.createKey({
              query: {},
              payload: { label: "capped", spend_cap_credits: 10, cap_period: "day", platforms: ["profnet"] }
            })
          )
          assert.strictEqual(capped.spend_cap_credits, 10)

          const first = yield* sdk({ key: capped.key }, (client) => client.getProfile({ query }))
          assert.strictEqual(first.cost.charged, 4)
          assert.strictEqual(first.usage.credits_charged, 4)
          assert.strictEqual(first.usage.key_cap_remaining, 6)
          assert.isNumber(first.usage.credits_remaining)
          const rate = first.usage.rate_limit
          assert.isDefined(rate)
          assert.isAbove(rate!.limit, 0)
          assert.isBelow(rate!.remaining, rate!.limit)
          assert.isAbove(rate!.window_seconds, 0)

          const second = yield* sdk({ key: capped.key }, (client) => client.getProfile({ query }))
          assert.strictEqual(second.usage.key_cap_remaining, 2)
          assert.strictEqual(second.usage.credits_remaining, first.usage.credits_remaining! - 4)

          const refused = yield* sdk({ key: capped.key }, (client) =>
            Effect.flip(client.getProfile({ query }))
          )
          assert.instanceOf(refused, KeyCapReached)
          assert.notInstanceOf(refused, InsufficientCredits)
          if (!(refused instanceof KeyCapReached)) return
          assert.strictEqual(refused._tag, "KeyCapReached")
          assert.strictEqual(refused.code, "INSUFFICIENT_CREDITS")
          assert.strictEqual(refused.limit, "key_cap")
          assert.strictEqual(refused.credits_available, 2)
          assert.strictEqual(refused.credits_required, 4)
          assert.strictEqual(refused.cap_resets_at, nextUtcMidnight())
          // Typed: catchTag sees it by its own tag.
          const caught = yield* sdk({ key: capped.key }, (client) =>
            client
              .getProfile({ query })
              .pipe(Effect.catchTag("KeyCapReached", (error) => Effect.succeed(error.credits_available)))
          )
          assert.strictEqual(caught, 2)

          // followingOffer hands KeyCapReached to `pay`, which raises the cap (buying credits would not
          // help); the same call resumes with its Idempotency-Key. Nothing was charged for the refusals.
          const seen: Array<string> = []
          const third = yield* sdk({ key: capped.key, managementToken: owner.token }, (client) =>
            followingOffer(client.getProfile({ query }), (offer, error) =>
              Effect.gen(function* () {
                seen.push(`${(error as { _tag: string })._tag} ${offer.resume.action}`)
                const raised = yield* client.updateKey({
                  query: {},
                  payload: { key_id: capped.key_id, spend_cap_credits: 20 }
                })
                assert.strictEqual(raised.spent_in_period, 8)
              }).pipe(Effect.orDie)
            )
          )
          assert.deepStrictEqual(seen, ["KeyCapReached retry_same_idempotency_key"])
          assert.strictEqual(third.usage.key_cap_remaining, 8)
          assert.strictEqual(third.usage.credits_remaining, first.usage.credits_remaining! - 8)

          // Other routes answer as they are, without usage.
          const listed = yield* sdk({ managementToken: owner.token }, (client) =>
            client.listKeys({ query: {} })
          )
          assert.notProperty(listed, "usage")

          // An account out of credits (no key cap) is the plain InsufficientCredits.
          const broke = yield* paidKey(freshIp(), 0)
          const plainRefusal = yield* sdk({ key: broke.key }, (client) =>
            Effect.flip(client.getProfile({ query }))
          )
          assert.instanceOf(plainRefusal, InsufficientCredits)
          assert.notInstanceOf(plainRefusal, KeyCapReached)
        })
    )

    it.effect(
      "the Promise client: usage on results, KeyCapReached on rejection, child keys with a spend key",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const owner = yield* account("sdk-cap-promise@example.com", 1_000)
          // The owner lets the key delegate.
          const manager = createClient({ baseUrl: app.url, managementToken: owner.token, retry: fast })
          const keyId = (yield* Effect.promise(() => manager.listKeys({ query: {} }))).keys[0]!.key_id
          yield* Effect.promise(() =>
            manager.updateKey({ query: {}, payload: { key_id: keyId, may_delegate: true } })
          )
          const parent = createClient({ baseUrl: app.url, key: owner.key, retry: fast })
          const child = yield* Effect.promise(() =>
            parent.createChildKey({
              payload: { label: "sub-agent", spend_cap_credits: 5, cap_period: "total" }
            })
          )
          assert.match(child.parent_key_id, /^key_/)
          assert.strictEqual(child.spend_cap_credits, 5)
          const narrowed = yield* Effect.promise(() =>
            parent.updateChildKey({ payload: { key_id: child.key_id, platforms: ["profnet"] } })
          )
          assert.deepStrictEqual(narrowed.platforms, ["profnet"])
          const children = yield* Effect.promise(() => parent.listChildKeys())
          assert.deepStrictEqual(
            children.keys.map((k) => k.key_id),
            [child.key_id]
          )

          const sub = createClient({ baseUrl: app.url, key: child.key, retry: fast })
          const answered = yield* Effect.promise(() => sub.getProfile({ query }))
          assert.strictEqual(answered.usage.credits_charged, 4)
          assert.strictEqual(answered.usage.key_cap_remaining, 1)
          const rejected = yield* Effect.promise(() =>
            sub.getProfile({ query }).then(
              () => undefined,
              (error: unknown) => error
            )
          )
          assert.instanceOf(rejected, KeyCapReached)
          if (rejected instanceof KeyCapReached) {
            assert.strictEqual(rejected.credits_available, 1)
            assert.isUndefined(rejected.cap_resets_at, "a total cap never resets")
          }

          const revoked = yield* Effect.promise(() =>
            parent.revokeChildKey({ payload: { key_id: child.key_id } })
          )
          assert.strictEqual(revoked.key_id, child.key_id)
          const after = yield* Effect.promise(() =>
            sub.getProfile({ query }).then(
              () => undefined,
              (error: unknown) => error
            )
          )
          assert.strictEqual((after as { readonly code?: string }).code, "UNAUTHORIZED")
        })
    )
  })
})
