import { assert, describe, layer } from "@effect/vitest"
import { Effect, Result } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import { Unauthorized } from "../../src/contract/errors.ts"
import { hashSecret } from "../../src/domain/secrets.ts"
import { Bearers } from "../../src/identity/Bearers.ts"
import type { Identity } from "../../src/identity/types.ts"
import { type CallInput, meterDataCall } from "../../src/metering/meterDataCall.ts"
import { operations } from "../../src/operations/registry.ts"
import { KeyMemory } from "../../src/services/KeyMemory.ts"
import { Keys } from "../../src/services/Keys.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { paidCaller, profilePath, profileSlugs, slugCycle, warmedProfile } from "../support/profiles.ts"

const nextSlug = slugCycle(profileSlugs("engineer"))
const freshIp = ipSequence("10.78")
const profile = profilePath
const getProfile = operations.find((operation) => operation.id === "getProfile")!
const paidAccount = paidCaller(freshIp)
const warmed = warmedProfile(nextSlug, paidAccount)

/** A paid account, with its key's id, and its balance, receipts and identity versions as stored. */
const paid = (credits: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const account = yield* paidAccount(credits)
    const keyId = String(
      (yield* Effect.orDie(sql`SELECT id FROM api_keys WHERE account_id = ${account.account_id}`))[0]!.id
    )
    const balance = Effect.map(
      Effect.orDie(sql`SELECT balance_credits FROM accounts WHERE id = ${account.account_id}`),
      (rows) => Number(rows[0]!.balance_credits)
    )
    const receipts = Effect.map(
      Effect.orDie(sql`SELECT COUNT(*) AS n FROM calls WHERE account_id = ${account.account_id}`),
      (rows) => Number(rows[0]!.n)
    )
    const versions = Effect.map(
      Effect.orDie(
        sql`SELECT a.identity_version AS account, k.identity_version AS key
          FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = ${keyId}`
      ),
      (rows) => ({ account: Number(rows[0]!.account), key: Number(rows[0]!.key) })
    )
    return { ...account, keyId, balance, receipts, versions }
  })

/** The report of a change, applied by this instance (in process on PGlite, a moment later on PostgreSQL). */
const forgotten = (hash: string) =>
  Effect.gen(function* () {
    const memory = yield* KeyMemory
    for (let i = 0; i < 100 && memory.peek(hash, Date.now()) !== undefined; i++)
      yield* Effect.sleep("50 millis")
    assert.isUndefined(memory.peek(hash, Date.now()))
  })

/**
 * Calls until the key is remembered: on PostgreSQL the reports of the account's own setup (its
 * claim, its purchase) reach this instance a moment later and forget what the first call stored.
 */
const remembered = (
  call: () => Effect.Effect<{ readonly status: number; readonly body: unknown }>,
  hash: string
) =>
  Effect.gen(function* () {
    const memory = yield* KeyMemory
    for (let i = 0; i < 40; i++) {
      const answer = yield* call()
      assert.strictEqual(answer.status, 200, JSON.stringify(answer.body))
      const entry = memory.peek(hash, Date.now())
      if (entry !== undefined) return entry
      yield* Effect.sleep("50 millis")
    }
    return assert.fail("the key was never remembered")
  })

describe(`a remembered key checked by the cache hit's own statement (${storeName})`, () => {
  layer(testApp(operations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect(
      "every change that matters to authentication bumps its row's version, and nothing else does",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const slug = yield* warmed
          const account = yield* paid(1000)
          const start = yield* account.versions
          // A hit and a full call move credits, touch the key and write receipts: no version moves.
          assert.strictEqual((yield* account.call(profile(slug))).status, 200)
          assert.strictEqual((yield* account.call(profile(nextSlug()))).status, 200)
          yield* Effect.orDie(sql`UPDATE api_keys SET last_used_at = 1 WHERE id = ${account.keyId}`)
          yield* Effect.orDie(
            sql`UPDATE accounts SET plan = plan, state = state WHERE id = ${account.account_id}`
          )
          assert.deepStrictEqual(yield* account.versions, start)

          yield* Effect.orDie(sql`UPDATE accounts SET alert_threshold = 7 WHERE id = ${account.account_id}`)
          assert.deepStrictEqual(yield* account.versions, { account: start.account + 1, key: start.key })
          yield* Effect.orDie(sql`UPDATE api_keys SET spend_cap_credits = 500 WHERE id = ${account.keyId}`)
          assert.deepStrictEqual(yield* account.versions, { account: start.account + 1, key: start.key + 1 })
          yield* Effect.orDie(sql`UPDATE api_keys SET revoked_at = 2 WHERE id = ${account.keyId}`)
          assert.deepStrictEqual(yield* account.versions, { account: start.account + 1, key: start.key + 2 })
        })
    )

    it.effect("a hit from a key remembered past its revocation is refused, and charges nothing", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const memory = yield* KeyMemory
        const slug = yield* warmed
        const account = yield* paid(1000)
        const hash = hashSecret(account.key)
        const entry = yield* remembered(() => account.call(profile(slug)), hash)
        const balance = yield* account.balance
        const receipts = yield* account.receipts

        // Revoked elsewhere; the report reaches this instance and forgets the key.
        yield* Effect.orDie(sql`UPDATE api_keys SET revoked_at = ${Date.now()} WHERE id = ${account.keyId}`)
        yield* forgotten(hash)
        // As if the report were still on its way: the key is remembered as it was before.
        memory.remember(hash, entry!, memory.generation(), Date.now())
        assert.strictEqual(memory.peek(hash, Date.now()), entry)

        const key = crypto.randomUUID()
        const refused = yield* account.call(profile(slug), key)
        assert.strictEqual(refused.status, 401, JSON.stringify(refused.body))
        assert.strictEqual(refused.body.code, "UNAUTHORIZED")
        assert.strictEqual(yield* account.balance, balance)
        assert.strictEqual(yield* account.receipts, receipts)
        const stored = yield* Effect.orDie(
          sql`SELECT COUNT(*) AS n FROM idempotency_keys WHERE account_id = ${account.account_id} AND idem_key = ${key}`
        )
        assert.strictEqual(Number(stored[0]!.n), 0)
        // The key read again is remembered no more (revoked): the next call is refused too.
        assert.isUndefined(memory.peek(hash, Date.now()))
        assert.strictEqual((yield* account.call(profile(slug))).status, 401)
      })
    )

    it.effect(
      "a hit from a child remembered past its parent's change (narrowed, revoked) is refused, and charges nothing",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const memory = yield* KeyMemory
          const app = yield* TestApp
          const keys = yield* Keys
          const slug = yield* warmed
          const account = yield* paid(1000)
          // A child of the account's key, able to call every platform its parent may.
          const child = yield* Effect.orDie(
            keys.issue({
              accountId: account.account_id,
              plan: "production",
              label: "child",
              limits: { spendCapCredits: 500, capPeriod: "total", platforms: null },
              parentKeyId: account.keyId
            })
          )
          const call = (idempotencyKey = crypto.randomUUID()) =>
            app.call(profile(slug), { key: child.key, ip: account.ip, idempotencyKey })
          const hash = hashSecret(child.key)

          for (const [setup, change, status, code] of [
            [
              Effect.void,
              sql`UPDATE api_keys SET platforms = 'forum' WHERE id = ${account.keyId}`,
              403,
              "NOT_ENTITLED"
            ],
            [
              Effect.andThen(
                Effect.orDie(sql`UPDATE api_keys SET platforms = NULL WHERE id = ${account.keyId}`),
                forgotten(hash)
              ),
              sql`UPDATE api_keys SET revoked_at = ${Date.now()} WHERE id = ${account.keyId}`,
              401,
              "UNAUTHORIZED"
            ]
          ] as const) {
            yield* setup
            const entry = yield* remembered(call, hash)
            const balance = yield* account.balance
            const receipts = yield* account.receipts

            // The parent changed elsewhere (its child's own row untouched); the report reaches this
            // instance and forgets the account's keys.
            yield* Effect.orDie(change)
            yield* forgotten(hash)
            // As if the report were still on its way: the child is remembered as it was before.
            memory.remember(hash, entry!, memory.generation(), Date.now())

            const refused = yield* call()
            assert.strictEqual(refused.status, status, JSON.stringify(refused.body))
            assert.strictEqual(refused.body.code, code)
            assert.strictEqual(yield* account.balance, balance)
            assert.strictEqual(yield* account.receipts, receipts)
          }
        })
    )

    it.effect(
      "an unconfirmed caller: a charged hit never waits to confirm it; every other answer confirms it once, first",
      () =>
        Effect.gen(function* () {
          const bearers = yield* Bearers
          const slug = yield* warmed
          const account = yield* paid(1000)
          const principal = yield* bearers.authenticate(account.key)
          const current = yield* account.versions
          let confirms = 0
          let rereads = 0
          const caller = (
            versions: typeof current,
            confirm: Effect.Effect<Identity | undefined, Unauthorized> = Effect.undefined
          ) => ({
            key: principal.key,
            account: principal.account,
            ip: account.ip,
            unconfirmed: {
              versions,
              confirm: Effect.suspend(() => {
                confirms++
                return confirm
              }),
              reread: Effect.sync((): Identity => {
                rereads++
                return { key: principal.key, account: principal.account }
              })
            }
          })
          const input = (slugOf: string, idempotencyKey: string | undefined = crypto.randomUUID()) =>
            Effect.succeed<CallInput>({
              params: { identifier: slugOf },
              freshness: "recent",
              maxCredits: undefined,
              idempotencyKey
            })
          const metered = (who: ReturnType<typeof caller>, what: Effect.Effect<CallInput>) =>
            Effect.map(meterDataCall(getProfile, who, what), ({ result }) => result)
          const counted = () => {
            const seen = { confirms, rereads }
            confirms = 0
            rereads = 0
            return seen
          }

          // A hit: the charge checks the versions; nothing else confirms.
          const key = crypto.randomUUID()
          const hit = yield* metered(caller(current), input(slug, key))
          assert.isTrue(Result.isSuccess(hit) && !hit.success.replayed && hit.success.receipt.charged > 0)
          assert.deepStrictEqual(counted(), { confirms: 0, rereads: 0 })
          const charged = 1000 - (yield* account.balance)

          // A replay, a refusal, a miss (the full way): each confirms once before it answers.
          const replay = yield* metered(caller(current), input(slug, key))
          assert.isTrue(Result.isSuccess(replay) && replay.success.replayed)
          assert.deepStrictEqual(counted(), { confirms: 1, rereads: 0 })
          const invalid = yield* metered(caller(current), input(slug, "short"))
          assert.isTrue(Result.isFailure(invalid) && invalid.failure._tag === "InvalidInput")
          assert.deepStrictEqual(counted(), { confirms: 1, rereads: 0 })
          const miss = yield* metered(caller(current), input(nextSlug()))
          assert.isTrue(Result.isSuccess(miss) && miss.success.receipt.funding.balance > 0)
          assert.deepStrictEqual(counted(), { confirms: 1, rereads: 0 })
          const afterMiss = yield* account.balance

          // A caller found revoked on confirming: refused, nothing charged.
          const revoked = Effect.fail(new Unauthorized({ message: "This key is not active." }))
          const refusedMiss = yield* metered(caller(current, revoked), input(nextSlug()))
          assert.isTrue(Result.isFailure(refusedMiss) && refusedMiss.failure._tag === "Unauthorized")
          assert.deepStrictEqual(counted(), { confirms: 1, rereads: 0 })
          const refusedReplay = yield* metered(caller(current, revoked), input(slug, key))
          assert.isTrue(Result.isFailure(refusedReplay) && refusedReplay.failure._tag === "Unauthorized")
          assert.deepStrictEqual(counted(), { confirms: 1, rereads: 0 })
          assert.strictEqual(yield* account.balance, afterMiss)

          // Versions no longer current: the hit is declined, the caller read again, the call made
          // again as it reads, and charged once.
          const receipts = yield* account.receipts
          const stale = yield* metered(
            caller({ account: current.account - 1, key: current.key }),
            input(slug)
          )
          assert.isTrue(Result.isSuccess(stale) && stale.success.receipt.charged === charged)
          assert.deepStrictEqual(counted(), { confirms: 0, rereads: 1 })
          assert.strictEqual(yield* account.receipts, receipts + 1)
          assert.strictEqual(yield* account.balance, afterMiss - charged)
        }).pipe(Effect.provide(AppConfig.layerTest({ trustedProxies: ["127.0.0.1", "::1"] })))
    )
  })
})
