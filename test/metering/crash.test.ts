import { assert, describe, layer } from "@effect/vitest"
import { Clock, Deferred, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { AppConfig } from "../../src/config.ts"
import { dayOf } from "../../src/domain/time.ts"
import { IdempotencyStore } from "../../src/metering/IdempotencyStore.ts"
import { Receipts } from "../../src/metering/Receipts.ts"
import { Reservations, type ReserveInput } from "../../src/metering/Reservations.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { ServicesLayer } from "../../src/service.ts"
import { Accounts } from "../../src/services/Accounts.ts"
import { freshDatabase, storeName } from "../support/database.ts"

/**
 * A process that dies between `reserve` and `settle` leaves a reservation behind. Its lease
 * (60 s) must expire, and then the sweeper, or the account's next reservation, refunds it
 * exactly. Virtual time: the services read the TestClock, so "61 seconds later" is instant.
 */
const Services = ServicesLayer.pipe(Layer.provideMerge(freshDatabase), Layer.provide(AppConfig.layerTest()))

let ipCounter = 0
const freshIp = () => `10.30.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`

const trialAccount = Effect.gen(function* () {
  const ip = freshIp()
  const minted = yield* (yield* Accounts).mintTrial(ip)
  return { accountId: minted.account.id, keyId: minted.key.id, ip, plan: "trial" as const }
}).pipe(Effect.orDie)

const paidAccount = (balance: number) =>
  Effect.gen(function* () {
    const admin = yield* Admin
    const trial = yield* trialAccount
    yield* admin.setPlan(trial.accountId, "flex")
    yield* admin.credit(trial.accountId, balance, "balance", "test purchase")
    return { ...trial, plan: "flex" as const }
  }).pipe(Effect.orDie)

const reserveInput = (
  account: {
    readonly accountId: string
    readonly keyId: string
    readonly ip: string
    readonly plan: "trial" | "flex"
  },
  quoted: number,
  idempotencyKey?: string,
  callId = `rcpt_crash_${++callCounter}`
): ReserveInput => ({ ...account, callId, operation: "testEcho", quoted, realtime: false, idempotencyKey })
let callCounter = 0

/** What the database says about an account's money and its calls. */
const snapshot = (account: { readonly accountId: string; readonly ip: string }) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const day = dayOf(yield* Clock.currentTimeMillis)
    const [money] = yield* sql<{ readonly grant_credits: number; readonly balance_credits: number }>`
      SELECT grant_credits, balance_credits FROM accounts WHERE id = ${account.accountId}`
    const [free] = yield* sql<{ readonly credits_used: number }>`
      SELECT credits_used FROM free_tier_usage WHERE ip = ${account.ip} AND day = ${day}`
    const calls = yield* sql<{ readonly id: string; readonly state: string; readonly charged: number }>`
      SELECT id, state, charged FROM calls WHERE account_id = ${account.accountId} ORDER BY created_at, id`
    const inFlight = (yield* (yield* Admin).account(account.accountId))?.in_flight
    return {
      balance: Number(money?.balance_credits),
      grant: Number(money?.grant_credits),
      freeUsed: Number(free?.credits_used ?? 0),
      calls: calls.map((call) => ({ id: call.id, state: call.state, charged: Number(call.charged) })),
      inFlight
    }
  }).pipe(Effect.orDie)

/** Real time, for waiting on another database session (the TestClock does not move PostgreSQL). */
const pause = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

const sessionsWaitingOnLocks = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ readonly n: number }>`SELECT COUNT(*) AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'`
  return Number(row?.n)
}).pipe(Effect.orDie)

const untilWaiting = (sessions: number) =>
  Effect.gen(function* () {
    for (let attempt = 0; attempt < 500; attempt++) {
      if ((yield* sessionsWaitingOnLocks) >= sessions) return
      yield* pause(10)
    }
    assert.fail(`${sessions} sessions never waited on a lock`)
  })

const reserveFailure = (input: ReserveInput) =>
  Effect.gen(function* () {
    const ledger = yield* Reservations
    const error = yield* ledger.reserve(input).pipe(Effect.catchTag("SqlError", Effect.die), Effect.flip)
    return error._tag
  })

describe(`a call that dies between reserve and settle (${storeName})`, () => {
  layer(Services, { timeout: 60_000 })((it) => {
    it.effect("the sweeper refunds an expired reservation exactly and frees the account", () =>
      Effect.gen(function* () {
        const ledger = yield* Reservations
        const trial = yield* trialAccount
        const paid = yield* paidAccount(100)

        const deadFree = yield* Effect.orDie(ledger.reserve(reserveInput(trial, 30)))
        const deadPaid = yield* Effect.orDie(ledger.reserve(reserveInput(paid, 25, "idem-dead-paid")))
        assert.deepStrictEqual(deadFree.reserved, { free_tier: 30, grant: 0, balance: 0 })
        assert.deepStrictEqual(deadPaid.reserved, { free_tier: 0, grant: 0, balance: 25 })
        // ... and the process dies here: nobody settles or releases.

        assert.strictEqual(yield* reserveFailure(reserveInput(trial, 1)), "ConcurrencyLimit")
        assert.strictEqual(yield* reserveFailure(reserveInput(paid, 1)), "ConcurrencyLimit")
        const heldTrial = yield* snapshot(trial)
        const heldPaid = yield* snapshot(paid)
        assert.strictEqual(heldTrial.freeUsed, 30)
        assert.strictEqual(heldTrial.inFlight, 1)
        assert.strictEqual(heldPaid.balance, 75)
        assert.strictEqual(heldPaid.inFlight, 1)
        assert.deepStrictEqual(
          [...heldTrial.calls, ...heldPaid.calls].map((call) => call.state),
          ["reserved", "reserved"]
        )

        yield* TestClock.adjust("59 seconds")
        assert.strictEqual(yield* Effect.orDie(ledger.sweepExpired), 0, "a live lease is not swept")
        assert.strictEqual(yield* reserveFailure(reserveInput(paid, 1)), "ConcurrencyLimit")

        yield* TestClock.adjust("2 seconds")
        assert.isAtLeast(yield* Effect.orDie(ledger.sweepExpired), 2)
        assert.strictEqual(yield* Effect.orDie(ledger.sweepExpired), 0, "a swept call is swept once")

        const sweptTrial = yield* snapshot(trial)
        const sweptPaid = yield* snapshot(paid)
        assert.strictEqual(sweptTrial.freeUsed, 0)
        assert.strictEqual(sweptPaid.balance, 100)
        assert.strictEqual(sweptTrial.inFlight, 0)
        assert.strictEqual(sweptPaid.inFlight, 0)
        assert.deepStrictEqual(
          [...sweptTrial.calls, ...sweptPaid.calls].map(({ state, charged }) => ({ state, charged })),
          [
            { state: "released", charged: 0 },
            { state: "released", charged: 0 }
          ]
        )
        assert.deepStrictEqual(
          yield* Effect.orDie((yield* Receipts).list(trial.accountId, { limit: 10 })),
          []
        )
        assert.deepStrictEqual(yield* Effect.orDie((yield* Receipts).list(paid.accountId, { limit: 10 })), [])
        assert.isUndefined(yield* Effect.orDie((yield* Receipts).get(paid.accountId, deadPaid.callId)))

        // The holder comes back to life after the sweep: its settle and release change nothing.
        const late = yield* ledger
          .settle(deadPaid, [], () => Effect.void)
          .pipe(Effect.catchTag("SqlError", Effect.die), Effect.flip)
        assert.strictEqual(late._tag, "ReservationLost")
        assert.isFalse(yield* Effect.orDie(ledger.release(deadFree)))
        assert.deepStrictEqual(yield* snapshot(paid), sweptPaid)
        assert.deepStrictEqual(yield* snapshot(trial), sweptTrial)

        const next = yield* Effect.orDie(ledger.reserve(reserveInput(paid, 10, "idem-next")))
        const { receipt } = yield* Effect.orDie(ledger.settle(next, [], () => Effect.void))
        assert.strictEqual(receipt.charged, 10)
        assert.strictEqual((yield* snapshot(paid)).balance, 90)
        const again = yield* Effect.orDie(ledger.reserve(reserveInput(trial, 5)))
        yield* Effect.orDie(ledger.release(again))
        assert.strictEqual((yield* snapshot(trial)).freeUsed, 0)
        assert.deepStrictEqual(
          (yield* Effect.orDie((yield* Receipts).list(paid.accountId, { limit: 10 }))).map((r) => r.id),
          [next.callId]
        )
      })
    )

    it.effect("without the sweeper, the account's next reservation refunds the dead one", () =>
      Effect.gen(function* () {
        const ledger = yield* Reservations
        const trial = yield* trialAccount
        const paid = yield* paidAccount(50)
        yield* Effect.orDie(ledger.reserve(reserveInput(trial, 40)))
        yield* Effect.orDie(ledger.reserve(reserveInput(paid, 30, "idem-lazy")))

        yield* TestClock.adjust("59 seconds")
        assert.strictEqual(yield* reserveFailure(reserveInput(trial, 10)), "ConcurrencyLimit")
        assert.strictEqual(yield* reserveFailure(reserveInput(paid, 10)), "ConcurrencyLimit")
        assert.strictEqual((yield* snapshot(trial)).freeUsed, 40)
        assert.strictEqual((yield* snapshot(paid)).balance, 20)

        yield* TestClock.adjust("2 seconds")
        const trialNext = yield* Effect.orDie(ledger.reserve(reserveInput(trial, 10)))
        const paidNext = yield* Effect.orDie(ledger.reserve(reserveInput(paid, 10, "idem-lazy-2")))
        assert.deepStrictEqual(trialNext.reserved, { free_tier: 10, grant: 0, balance: 0 })
        assert.deepStrictEqual(paidNext.reserved, { free_tier: 0, grant: 0, balance: 10 })
        const trialNow = yield* snapshot(trial)
        const paidNow = yield* snapshot(paid)
        assert.strictEqual(trialNow.freeUsed, 10, "the dead 40 are back; the new 10 are held")
        assert.strictEqual(paidNow.balance, 40, "the dead 30 are back; the new 10 are held")
        assert.deepStrictEqual(
          [...trialNow.calls, ...paidNow.calls].map(({ state, charged }) => ({ state, charged })),
          [
            { state: "released", charged: 0 },
            { state: "reserved", charged: 0 },
            { state: "released", charged: 0 },
            { state: "reserved", charged: 0 }
          ]
        )

        yield* Effect.orDie(
          ledger.settle(trialNext, [{ reason: "fewer_results", credits: 4 }], () => Effect.void)
        )
        yield* Effect.orDie(ledger.release(paidNext))
        const trialEnd = yield* snapshot(trial)
        const paidEnd = yield* snapshot(paid)
        assert.strictEqual(trialEnd.freeUsed, 6)
        assert.strictEqual(paidEnd.balance, 50)
        assert.strictEqual(yield* Effect.orDie(ledger.sweepExpired), 0, "nothing is left to sweep")
        const [receipt] = yield* Effect.orDie((yield* Receipts).list(trial.accountId, { limit: 10 }))
        assert.strictEqual(receipt?.id, trialNext.callId)
        assert.deepStrictEqual(receipt?.funding, { free_tier: 6, grant: 0, balance: 0 })
        assert.deepStrictEqual(yield* Effect.orDie((yield* Receipts).list(paid.accountId, { limit: 10 })), [])
      })
    )

    it.effect("an idempotency key whose call died is taken over by a retry after its lease", () =>
      Effect.gen(function* () {
        const ledger = yield* Reservations
        const store = yield* IdempotencyStore
        const sql = yield* SqlClient.SqlClient
        const paid = yield* paidAccount(60)
        const key = "idem-takeover-0001"
        const begin = (fingerprint: string, owner = "rcpt_takeover_waiting") =>
          Effect.orDie(store.begin(paid.accountId, key, fingerprint, owner))

        assert.strictEqual((yield* begin("print-a", "rcpt_takeover_dead"))._tag, "Fresh")
        yield* Effect.orDie(ledger.reserve(reserveInput(paid, 20, key, "rcpt_takeover_dead")))
        // The process dies: neither `complete` nor `release` runs for this key.

        assert.strictEqual((yield* begin("print-a"))._tag, "Running")
        assert.strictEqual((yield* begin("print-b"))._tag, "Reused")
        yield* TestClock.adjust("30 seconds")
        assert.strictEqual((yield* begin("print-a"))._tag, "Running")
        yield* TestClock.adjust("31 seconds")

        assert.strictEqual(
          (yield* begin("print-a", "rcpt_takeover_retry"))._tag,
          "Fresh",
          "the retry takes the dead key over"
        )
        assert.strictEqual((yield* begin("print-a"))._tag, "Running", "and holds it with a new lease")
        assert.isFalse(
          yield* Effect.orDie(store.release(paid.accountId, key, "rcpt_takeover_dead")),
          "the dead holder cannot release the new holder's claim"
        )

        const retry = yield* Effect.orDie(ledger.reserve(reserveInput(paid, 20, key, "rcpt_takeover_retry")))
        const { receipt } = yield* Effect.orDie(
          ledger.settle(retry, [], (receipt) =>
            store.complete(paid.accountId, key, receipt.id, JSON.stringify({ kind: "echo" }))
          )
        )
        assert.strictEqual(receipt.charged, 20)
        const replay = yield* begin("print-a")
        assert.strictEqual(replay._tag, "Replay")
        assert.strictEqual(replay._tag === "Replay" ? replay.call.id : "", retry.callId)

        const calls = yield* Effect.orDie(sql<{ readonly id: string; readonly state: string }>`
          SELECT id, state FROM calls WHERE account_id = ${paid.accountId} AND idempotency_key = ${key}
          ORDER BY created_at, id`)
        assert.deepStrictEqual(
          calls.map((call) => call.state),
          ["released", "settled"]
        )
        const [stored] = yield* Effect.orDie(sql<{ readonly state: string; readonly call_id: string }>`
          SELECT state, call_id FROM idempotency_keys WHERE account_id = ${paid.accountId} AND idem_key = ${key}`)
        assert.deepStrictEqual(stored, { state: "done", call_id: retry.callId })
        assert.strictEqual((yield* snapshot(paid)).balance, 40, "charged once, for the retry only")
      })
    )

    // PGlite has one connection and runs one transaction at a time, so only PostgreSQL can interleave these.
    it.effect.runIf(storeName === "postgres")(
      "refunding a dead reservation from one IP while reserving from another takes locks in the ledger's order (PostgreSQL only: PGlite runs one transaction at a time)",
      () =>
        Effect.gen(function* () {
          const ledger = yield* Reservations
          const sql = yield* SqlClient.SqlClient
          const deadOnY = yield* trialAccount
          const onX = yield* trialAccount
          const ipX = onX.ip
          yield* Effect.orDie(ledger.reserve(reserveInput(deadOnY, 10)))
          const warmUp = yield* Effect.orDie(ledger.reserve(reserveInput(onX, 1)))
          yield* Effect.orDie(ledger.release(warmUp))
          yield* TestClock.adjust("61 seconds")
          const day = dayOf(yield* Clock.currentTimeMillis)

          // Hold the day's free-tier row so both reservations queue on it, the lazy refund first.
          const held = yield* Deferred.make<void>()
          const go = yield* Deferred.make<void>()
          const holder = yield* Effect.forkChild(
            sql.withTransaction(
              Effect.gen(function* () {
                yield* sql`SELECT day FROM free_tier_days WHERE day = ${day} FOR UPDATE`
                yield* Deferred.succeed(held, undefined)
                yield* Deferred.await(go)
              })
            )
          )
          yield* Deferred.await(held)
          const waiting = yield* sessionsWaitingOnLocks
          const refunding = yield* Effect.forkChild(
            Effect.exit(ledger.reserve(reserveInput({ ...deadOnY, ip: ipX }, 5)))
          )
          yield* untilWaiting(waiting + 1)
          const other = yield* Effect.forkChild(Effect.exit(ledger.reserve(reserveInput(onX, 5))))
          yield* untilWaiting(waiting + 2)
          yield* Deferred.succeed(go, undefined)
          yield* Effect.orDie(Fiber.join(holder))

          const results = [yield* Fiber.join(refunding), yield* Fiber.join(other)]
          assert.deepStrictEqual(
            results.map((exit) => (exit._tag === "Success" ? "reserved" : String(exit.cause))),
            ["reserved", "reserved"]
          )
          const [free] = yield* Effect.orDie(sql<{ readonly credits_used: number }>`
            SELECT credits_used FROM free_tier_usage WHERE ip = ${deadOnY.ip} AND day = ${day}`)
          assert.strictEqual(free?.credits_used, 0, "the dead reservation was refunded")
          for (const exit of results)
            if (exit._tag === "Success") yield* Effect.orDie(ledger.release(exit.value))
        })
    )
  })
})
