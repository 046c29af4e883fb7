import { assert, describe, layer } from "@effect/vitest"
import { Clock, type Context, Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { AppConfig } from "../../src/config.ts"
import type { Caller } from "../../src/contract/api.ts"
import { IdempotencyStore } from "../../src/metering/IdempotencyStore.ts"
import { type CallInput, meterDataCall } from "../../src/metering/meterDataCall.ts"
import { Reservations } from "../../src/metering/Reservations.ts"
import { defineOperation } from "../../src/operations/Operation.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { ServicesLayer } from "../../src/service.ts"
import { Accounts } from "../../src/services/Accounts.ts"
import { freshDatabase, storeName } from "../support/database.ts"
import { echo } from "../support/testOperations.ts"

/**
 * A call that stalls past its lease (a hung upstream, a paused process) while a retry of the same
 * Idempotency-Key runs on another instance. Two service instances share one database; the upstream
 * blocks until the test opens its gate; the TestClock moves the lease. The stalled call must charge
 * nothing and leave the newer call's claim and stored result alone: one charge per key.
 */

interface Gate {
  readonly entered: Deferred.Deferred<void>
  readonly open: Deferred.Deferred<void>
}
const gates = new Map<string, Gate>()
const gateFor = (value: string) =>
  Effect.gen(function* () {
    const gate = { entered: yield* Deferred.make<void>(), open: yield* Deferred.make<void>() }
    gates.set(value, gate)
    return gate
  })

/** Like testEcho (6 credits), but a call whose `value` has a gate waits there until it opens. */
const gated = defineOperation({
  ...echo,
  id: "testGated",
  run: (args, context) =>
    Effect.gen(function* () {
      const gate = gates.get(args.value)
      if (gate !== undefined) {
        yield* Deferred.succeed(gate.entered, undefined)
        yield* Deferred.await(gate.open)
      }
      return yield* echo.run(args, context)
    })
})

type Instance = Context.Context<Layer.Success<typeof ServicesLayer>>

const Shared = freshDatabase.pipe(Layer.provideMerge(AppConfig.layerTest()))

let ipCounter = 0
const paidCaller = (instance: Instance, balance: number) =>
  Effect.gen(function* () {
    const minted = yield* (yield* Accounts).mintTrial(
      `10.40.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`
    )
    const admin = yield* Admin
    yield* admin.setPlan(minted.account.id, "flex")
    yield* admin.credit(minted.account.id, balance, "balance", "test purchase")
    const account = yield* (yield* Accounts).get(minted.account.id)
    if (account === undefined) return yield* Effect.die("account vanished")
    return { key: minted.key, account, ip: "10.40.0.1" }
  }).pipe(Effect.orDie, Effect.provide(instance))

const call = (instance: Instance, caller: Caller["Service"], idempotencyKey: string, value: string) =>
  meterDataCall(
    gated,
    caller,
    Effect.succeed<CallInput>({
      params: { value, cost: 6 },
      freshness: "recent",
      maxCredits: undefined,
      idempotencyKey
    })
  ).pipe(
    Effect.flatMap(({ result }) =>
      result._tag === "Success" ? Effect.succeed(result.success) : Effect.fail(result.failure)
    ),
    Effect.provide(instance)
  )

const ledgerOf = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [money] = yield* sql<{ readonly balance_credits: number }>`
      SELECT balance_credits FROM accounts WHERE id = ${accountId}`
    const calls = yield* sql<{ readonly id: string; readonly state: string; readonly charged: number }>`
      SELECT id, state, charged FROM calls WHERE account_id = ${accountId} ORDER BY created_at, id`
    const claims = yield* sql<{ readonly state: string; readonly owner: string | null }>`
      SELECT state, owner FROM idempotency_keys WHERE account_id = ${accountId}`
    return {
      balance: Number(money?.balance_credits),
      settled: calls
        .filter((row) => row.state === "settled")
        .map((row) => ({ id: row.id, charged: Number(row.charged) })),
      reserved: calls.filter((row) => row.state === "reserved").length,
      claims: claims.map((row) => row.state)
    }
  }).pipe(Effect.orDie)

/** Waits (in real time: the beat writes to the database) until the account's holder beat at `at`. */
const untilBeat = (accountId: string, at: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    for (let attempt = 0; attempt < 1000; attempt++) {
      const [row] = yield* sql<{ readonly heartbeat_at: number | null }>`
        SELECT heartbeat_at FROM calls WHERE account_id = ${accountId} AND state = 'reserved'`
      if (Number(row?.heartbeat_at ?? 0) >= at) return
      yield* Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))
    }
    assert.fail(`no heartbeat at ${at}`)
  }).pipe(Effect.orDie)

/** The housekeeping of one instance, run once (the sweeper's 5-second tick, made explicit). */
const housekeeping = (instance: Instance) =>
  Effect.gen(function* () {
    yield* (yield* Reservations).sweepExpired
    yield* (yield* IdempotencyStore).purgeExpired
  }).pipe(Effect.orDie, Effect.provide(instance))

describe(`a call that outlives its lease is fenced off (${storeName})`, () => {
  layer(Shared, { timeout: 60_000 })((it) => {
    it.effect("stalled past the lease, swept, retried elsewhere: one charge, the retry's result kept", () =>
      Effect.gen(function* () {
        const one = yield* Layer.build(ServicesLayer)
        const two = yield* Layer.build(ServicesLayer)
        const caller = yield* paidCaller(one, 1000)
        const key = "fence-stall-sweep-0001"
        const gate = yield* gateFor("stalled-1")

        // 1. A on instance one stalls in the upstream.
        const a = yield* Effect.forkChild(Effect.exit(call(one, caller, key, "stalled-1")))
        yield* Deferred.await(gate.entered)
        // 2. Its lease runs out; instance two's housekeeping refunds it and purges its claim.
        yield* TestClock.adjust("61 seconds")
        yield* housekeeping(two)
        assert.deepStrictEqual(yield* ledgerOf(caller.account.id), {
          balance: 1000,
          settled: [],
          reserved: 0,
          claims: []
        })
        // 3. The client retries K on instance two: B claims it afresh, runs and settles.
        const b = yield* call(two, caller, key, "stalled-1-retry")
        assert.isFalse(b.replayed)
        assert.strictEqual(b.envelope.receipt.charged, 6)
        // 4. A wakes up: fenced off, nothing charged, a retriable INTERNAL.
        yield* Deferred.succeed(gate.open, undefined)
        const aExit = yield* Fiber.join(a)
        assert.isTrue(Exit.isFailure(aExit))
        const aError = Exit.isFailure(aExit) ? aExit.cause : undefined
        const failure = aError === undefined ? undefined : JSON.stringify(aError)
        assert.include(failure, "INTERNAL")
        assert.include(failure, "retry_after_seconds")
        assert.include(failure, "receipt_id")
        // 5. B's stored result survived; K again is a replay of B, charged once in all.
        const replay = yield* call(one, caller, key, "stalled-1-retry")
        assert.isTrue(replay.replayed)
        assert.strictEqual(replay.envelope.receipt.id, b.envelope.receipt.id)
        assert.deepStrictEqual(yield* ledgerOf(caller.account.id), {
          balance: 994,
          settled: [{ id: b.envelope.receipt.id, charged: 6 }],
          reserved: 0,
          claims: ["done"]
        })
      })
    )

    it.effect(
      "stalled past the lease, its key taken over without a sweep: the late settle is rolled back",
      () =>
        Effect.gen(function* () {
          const one = yield* Layer.build(ServicesLayer)
          const two = yield* Layer.build(ServicesLayer)
          const caller = yield* paidCaller(one, 1000)
          const key = "fence-stall-takeover-01"
          const gateA = yield* gateFor("stalled-2")
          const gateB = yield* gateFor("stalled-2-retry")

          const a = yield* Effect.forkChild(Effect.exit(call(one, caller, key, "stalled-2")))
          yield* Deferred.await(gateA.entered)
          yield* TestClock.adjust("61 seconds")
          // B takes the dead claim over and refunds A's dead reservation itself (no sweeper ran),
          // then stalls in the upstream too.
          const b = yield* Effect.forkChild(call(two, caller, key, "stalled-2-retry"))
          yield* Deferred.await(gateB.entered)
          // A wakes while B holds the key and the account's slot.
          yield* Deferred.succeed(gateA.open, undefined)
          const aExit = yield* Fiber.join(a)
          assert.isTrue(Exit.isFailure(aExit))
          const held = yield* ledgerOf(caller.account.id)
          assert.deepStrictEqual(held, { balance: 994, settled: [], reserved: 1, claims: ["running"] })
          // B is untouched by A's cleanup: it settles and stores its result.
          yield* Deferred.succeed(gateB.open, undefined)
          const bDone = yield* Fiber.join(b)
          const replay = yield* call(one, caller, key, "stalled-2-retry")
          assert.isTrue(replay.replayed)
          assert.strictEqual(replay.envelope.receipt.id, bDone.envelope.receipt.id)
          assert.deepStrictEqual(yield* ledgerOf(caller.account.id), {
            balance: 994,
            settled: [{ id: bDone.envelope.receipt.id, charged: 6 }],
            reserved: 0,
            claims: ["done"]
          })
        })
    )

    it.effect("a holder that wakes between the takeover and the new reservation charges nothing", () =>
      Effect.gen(function* () {
        const one = yield* Layer.build(ServicesLayer)
        const two = yield* Layer.build(ServicesLayer)
        const caller = yield* paidCaller(one, 1000)
        const key = "fence-stall-claimlost-1"
        const gate = yield* gateFor("stalled-3")
        const a = yield* Effect.forkChild(Effect.exit(call(one, caller, key, "stalled-3")))
        yield* Deferred.await(gate.entered)
        yield* TestClock.adjust("61 seconds")
        // B has taken the claim over but not reserved yet: A's reservation is still there, so A's
        // settlement goes through the ledger, and its completion finds the claim gone: rolled back.
        const store = yield* Effect.provide(
          Effect.gen(function* () {
            return yield* IdempotencyStore
          }),
          two
        )
        const sql = yield* SqlClient.SqlClient
        const [held] = yield* Effect.orDie(sql<{ readonly fingerprint: string }>`
          SELECT fingerprint FROM idempotency_keys WHERE account_id = ${caller.account.id} AND idem_key = ${key}`)
        const takeover = yield* Effect.orDie(
          store.begin(caller.account.id, key, held?.fingerprint ?? "", "rcpt_fence_newer")
        )
        assert.strictEqual(takeover._tag, "Fresh")
        yield* Deferred.succeed(gate.open, undefined)
        const aExit = yield* Fiber.join(a)
        assert.isTrue(Exit.isFailure(aExit))
        assert.deepStrictEqual(yield* ledgerOf(caller.account.id), {
          balance: 1000,
          settled: [],
          reserved: 0,
          claims: ["running"]
        })
        // The newer holder still owns the claim: A's cleanup did not delete it.
        assert.isTrue(yield* Effect.orDie(store.release(caller.account.id, key, "rcpt_fence_newer")))
      })
    )

    it.effect("a live holder's heartbeat finds its reservation gone and stops at once", () =>
      Effect.gen(function* () {
        const one = yield* Layer.build(ServicesLayer)
        const two = yield* Layer.build(ServicesLayer)
        const caller = yield* paidCaller(one, 1000)
        const gate = yield* gateFor("stalled-4")
        const a = yield* Effect.forkChild(
          Effect.exit(call(one, caller, "fence-heartbeat-00001", "stalled-4"))
        )
        yield* Deferred.await(gate.entered)
        yield* TestClock.adjust("61 seconds")
        yield* housekeeping(two)
        // The next heartbeat (every 5 s) sees the reservation refunded: the call gives up without
        // waiting for its upstream, which never answers here.
        yield* TestClock.adjust("5 seconds")
        const aExit = yield* Fiber.join(a)
        assert.isTrue(Exit.isFailure(aExit))
        assert.include(JSON.stringify(aExit), "INTERNAL")
        assert.deepStrictEqual(yield* ledgerOf(caller.account.id), {
          balance: 1000,
          settled: [],
          reserved: 0,
          claims: []
        })
      })
    )

    it.effect(
      "CONCURRENCY_LIMIT's retry_after_seconds: 1 while the holder beats, the lease's rest once it is silent",
      () =>
        Effect.gen(function* () {
          const one = yield* Layer.build(ServicesLayer)
          const waitOf = (caller: Caller["Service"], idempotencyKey: string, value: string) =>
            call(one, caller, idempotencyKey, value).pipe(
              Effect.flip,
              Effect.map((error) => ({
                code: error.code,
                retry: "retry_after_seconds" in error ? error.retry_after_seconds : undefined
              }))
            )

          // Alive: the holder beats every 5 s, so waiting callers are told to come back in a second.
          const live = yield* paidCaller(one, 1000)
          const gate = yield* gateFor("stalled-5")
          const a = yield* Effect.forkChild(call(one, live, "fence-live-holder-01", "stalled-5"))
          yield* Deferred.await(gate.entered)
          for (let beat = 1; beat <= 4; beat++) {
            yield* TestClock.adjust("5 seconds")
            yield* untilBeat(live.account.id, yield* Clock.currentTimeMillis)
          }
          assert.deepStrictEqual(yield* waitOf(live, "fence-live-holder-01", "stalled-5"), {
            code: "CONCURRENCY_LIMIT",
            retry: 1
          })
          assert.deepStrictEqual(yield* waitOf(live, "fence-live-other-001", "other"), {
            code: "CONCURRENCY_LIMIT",
            retry: 1
          })
          yield* Deferred.succeed(gate.open, undefined)
          assert.strictEqual((yield* Fiber.join(a)).envelope.receipt.charged, 6)

          // Silent: a holder whose process froze right after reserving never beats; after 25 s the
          // waiting callers are told the 35 s left of its lease, not to poll every second.
          const frozen = yield* paidCaller(one, 1000)
          const key = "fence-frozen-holder-1"
          yield* Effect.gen(function* () {
            const store = yield* IdempotencyStore
            const ledger = yield* Reservations
            yield* store.begin(frozen.account.id, key, "frozen-print", "rcpt_fence_frozen")
            yield* ledger.reserve({
              callId: "rcpt_fence_frozen",
              accountId: frozen.account.id,
              plan: "flex",
              keyId: frozen.key.id,
              ip: frozen.ip,
              operation: "testGated",
              quoted: 6,
              realtime: false,
              idempotencyKey: key
            })
          }).pipe(Effect.orDie, Effect.provide(one))
          yield* TestClock.adjust("5 seconds")
          assert.deepStrictEqual(yield* waitOf(frozen, "fence-frozen-other-1", "other"), {
            code: "CONCURRENCY_LIMIT",
            retry: 1
          })
          yield* TestClock.adjust("20 seconds")
          assert.deepStrictEqual(yield* waitOf(frozen, "fence-frozen-other-2", "other"), {
            code: "CONCURRENCY_LIMIT",
            retry: 35
          })
          const sameKey = yield* Effect.gen(function* () {
            const store = yield* IdempotencyStore
            return yield* store.begin(frozen.account.id, key, "frozen-print", "rcpt_fence_waiting")
          }).pipe(Effect.orDie, Effect.provide(one))
          assert.deepStrictEqual(sameKey, { _tag: "Running", retryAfterSeconds: 35 })
        })
    )
  })
})
