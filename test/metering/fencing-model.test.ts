import { assert, describe, layer } from "@effect/vitest"
import { Clock, type Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import fc from "fast-check"
import { AppConfig } from "../../src/config.ts"
import { IdempotencyStore } from "../../src/metering/IdempotencyStore.ts"
import { type Reservation, Reservations } from "../../src/metering/Reservations.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { ServicesLayer } from "../../src/service.ts"
import { Accounts } from "../../src/services/Accounts.ts"
import { freshDatabase, storeName } from "../support/database.ts"

/**
 * A model of two holders of one Idempotency-Key on two instances, driven step by step through the
 * real IdempotencyStore and Reservations in every order fast-check finds: claim, reserve, run and settle
 * (with the completion in the settlement transaction), fail and release, crash (forget everything),
 * leases expiring, housekeeping. Whatever the interleaving: never two charges for the key, never a
 * 200 whose stored result is lost, and money conserved.
 */

type Instance = Context.Context<Layer.Success<typeof ServicesLayer>>

type Step =
  | { readonly t: "advance" | "fail" | "crash" | "sweep"; readonly h: 0 | 1 }
  | { readonly t: "expire" | "tick" }

const holder = fc.constantFrom<0 | 1>(0, 1)
const step: fc.Arbitrary<Step> = fc.oneof(
  // A holder takes its next step: claim the key, reserve, or run and settle.
  { arbitrary: fc.record({ t: fc.constant("advance" as const), h: holder }), weight: 12 },
  { arbitrary: fc.record({ t: fc.constant("fail" as const), h: holder }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant("crash" as const), h: holder }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant("sweep" as const), h: holder }), weight: 2 },
  { arbitrary: fc.constant({ t: "expire" as const }), weight: 2 },
  { arbitrary: fc.constant({ t: "tick" as const }), weight: 1 }
)

type Phase =
  | { readonly phase: "idle" }
  | { readonly phase: "claimed"; readonly callId: string; readonly since: number }
  | {
      readonly phase: "reserved"
      readonly callId: string
      readonly since: number
      readonly reservation: Reservation
    }

const quoted = 6
const startingBalance = 1000
const stats = { runs: 0, steps: 0, charges: 0, replays: 0, fenced: 0, concurrency: 0 }
let counter = 0

const scenario = (instances: ReadonlyArray<Instance>, steps: ReadonlyArray<Step>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const inOne = <A, E>(effect: Effect.Effect<A, E, Layer.Success<typeof ServicesLayer>>) =>
      Effect.provide(effect, instances[0]!)
    const minted = yield* inOne(
      Effect.gen(function* () {
        const minted = yield* (yield* Accounts).mintTrial(
          `10.50.${Math.floor(++counter / 250)}.${counter % 250}`
        )
        yield* (yield* Admin).setPlan(minted.account.id, "flex")
        yield* (yield* Admin).credit(minted.account.id, startingBalance, "balance", "test purchase")
        return minted
      })
    )
    const accountId = minted.account.id
    const key = `model-key-${++counter}`
    const holders: Array<Phase> = [{ phase: "idle" }, { phase: "idle" }]
    const answered: Array<{ readonly receiptId: string; readonly charged: number }> = []
    const replayed: Array<string> = []

    const run =
      (h: 0 | 1) =>
      <A, E>(effect: Effect.Effect<A, E, Layer.Success<typeof ServicesLayer>>) =>
        Effect.provide(effect, instances[h]!)
    // What the pipeline does on any failure after the claim: give back what it holds, fenced.
    const giveBack = (h: 0 | 1) =>
      run(h)(
        Effect.gen(function* () {
          const held = holders[h]!
          if (held.phase === "reserved") yield* (yield* Reservations).release(held.reservation)
          if (held.phase !== "idle") yield* (yield* IdempotencyStore).release(accountId, key, held.callId)
          holders[h] = { phase: "idle" }
        })
      )

    const perform = (s: Step) =>
      Effect.gen(function* () {
        switch (s.t) {
          case "expire":
            return yield* TestClock.adjust("61 seconds")
          case "tick":
            return yield* TestClock.adjust("20 seconds")
          case "sweep":
            return yield* run(s.h)(
              Effect.gen(function* () {
                yield* (yield* Reservations).sweepExpired
                yield* (yield* IdempotencyStore).purgeExpired
              })
            )
          case "crash":
            holders[s.h] = { phase: "idle" }
            return
        }
        const held = holders[s.h]!
        switch (s.t === "advance" ? held.phase : s.t) {
          case "idle": {
            const callId = `rcpt_model_${++counter}`
            const begun = yield* run(s.h)(
              IdempotencyStore.use((store) => store.begin(accountId, key, "print", callId))
            )
            if (begun._tag === "Fresh")
              holders[s.h] = { phase: "claimed", callId, since: yield* Clock.currentTimeMillis }
            if (begun._tag === "Replay") {
              replayed.push(begun.call.id)
              stats.replays++
            }
            return
          }
          case "claimed": {
            if (held.phase !== "claimed") return
            const reserved = yield* run(s.h)(
              Reservations.use((ledger) =>
                ledger.reserve({
                  callId: held.callId,
                  accountId,
                  plan: "flex",
                  keyId: minted.key.id,
                  ip: "10.50.0.1",
                  operation: "testEcho",
                  quoted,
                  realtime: false,
                  idempotencyKey: key
                })
              )
            ).pipe(
              Effect.map((reservation) => ({ _tag: "Reserved" as const, reservation })),
              Effect.catchTag("ConcurrencyLimit", (error) => Effect.succeed(error))
            )
            if (reserved._tag === "Reserved") {
              holders[s.h] = { ...held, phase: "reserved", reservation: reserved.reservation }
            } else {
              stats.concurrency++
              yield* giveBack(s.h)
            }
            return
          }
          case "reserved": {
            if (held.phase !== "reserved") return
            const settled = yield* run(s.h)(
              Effect.gen(function* () {
                const ledger = yield* Reservations
                const store = yield* IdempotencyStore
                return yield* ledger.settle(held.reservation, [], (receipt) =>
                  store.complete(accountId, key, held.callId, JSON.stringify({ receipt }))
                )
              })
            ).pipe(
              Effect.map((settled) => ({ _tag: "Settled" as const, receipt: settled.receipt })),
              Effect.catchTags({
                ReservationLost: (lost) => Effect.succeed(lost),
                ClaimLost: (lost) => Effect.succeed(lost)
              })
            )
            if (settled._tag === "Settled") {
              answered.push({ receiptId: settled.receipt.id, charged: settled.receipt.charged })
              stats.charges++
              holders[s.h] = { phase: "idle" }
            } else {
              // Only a holder that outlived its lease is ever fenced off.
              const now = yield* Clock.currentTimeMillis
              assert.isAtLeast(now - held.since, 60_000, `a live holder was fenced off (${settled._tag})`)
              stats.fenced++
              yield* giveBack(s.h)
            }
            return
          }
          case "fail":
            return yield* giveBack(s.h)
        }
      })

    const check = (where: string) =>
      Effect.gen(function* () {
        const settled = yield* sql<{ readonly id: string; readonly charged: number }>`
          SELECT id, charged FROM calls WHERE account_id = ${accountId} AND idempotency_key = ${key} AND state = 'settled'`
        const [money] = yield* sql<{ readonly balance_credits: number }>`
          SELECT balance_credits FROM accounts WHERE id = ${accountId}`
        const [held] = yield* sql<{ readonly held: number | null }>`
          SELECT SUM(reserved_balance) AS held FROM calls WHERE account_id = ${accountId} AND state = 'reserved'`
        const [claim] = yield* sql<{ readonly state: string; readonly call_id: string | null }>`
          SELECT state, call_id FROM idempotency_keys WHERE account_id = ${accountId} AND idem_key = ${key}`
        const charged = settled.reduce((sum, row) => sum + Number(row.charged), 0)
        assert.isAtMost(settled.length, 1, `${where}: two charges for one key`)
        assert.isAtMost(answered.length, 1, `${where}: two 200s ran for one key`)
        assert.strictEqual(
          Number(money?.balance_credits) + Number(held?.held ?? 0) + charged,
          startingBalance,
          `${where}: money not conserved`
        )
        const first = answered[0]
        if (first !== undefined) {
          assert.deepStrictEqual(
            settled.map((row) => ({ receiptId: row.id, charged: Number(row.charged) })),
            [first],
            `${where}: the 200's receipt is the charge`
          )
          assert.deepStrictEqual(
            claim,
            { state: "done", call_id: first.receiptId },
            `${where}: stored result lost`
          )
        }
        for (const id of replayed)
          assert.strictEqual(id, first?.receiptId, `${where}: replay of another result`)
      })

    for (const [index, s] of steps.entries()) {
      yield* perform(s)
      yield* check(`step ${index} ${JSON.stringify(s)}`)
      stats.steps++
    }
    // Everyone dies; the leases run out; housekeeping leaves nothing held.
    yield* TestClock.adjust("61 seconds")
    yield* perform({ t: "sweep", h: 0 })
    yield* check("after the sweep")
    const [left] = yield* sql<{ readonly reserved: number; readonly running: number }>`
      SELECT (SELECT COUNT(*) FROM calls WHERE account_id = ${accountId} AND state = 'reserved') AS reserved,
        (SELECT COUNT(*) FROM idempotency_keys WHERE account_id = ${accountId} AND state = 'running') AS running`
    assert.deepStrictEqual(
      { reserved: Number(left?.reserved), running: Number(left?.running) },
      { reserved: 0, running: 0 }
    )
    const last = yield* run(1)(
      IdempotencyStore.use((store) => store.begin(accountId, key, "print", "rcpt_model_last"))
    )
    if (answered[0] !== undefined) {
      assert.strictEqual(last._tag, "Replay")
      if (last._tag === "Replay") assert.strictEqual(last.call.id, answered[0].receiptId)
    }
    stats.runs++
  }).pipe(Effect.orDie)

const numRuns = Number(process.env.FENCING_RUNS ?? 100)

describe(`fencing model: two holders of one key (${storeName})`, () => {
  layer(freshDatabase.pipe(Layer.provideMerge(AppConfig.layerTest())), { timeout: 120_000 })((it) => {
    it.effect(
      "no interleaving charges a key twice or loses a stored result",
      () =>
        Effect.gen(function* () {
          const instances = [yield* Layer.build(ServicesLayer), yield* Layer.build(ServicesLayer)]
          const context = yield* Effect.context<SqlClient.SqlClient>()
          yield* Effect.promise(() =>
            fc.assert(
              fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 40, size: "max" }), (steps) =>
                Effect.runPromiseWith(context)(scenario(instances, steps))
              ),
              { numRuns }
            )
          )
          console.log(`fencing model (${storeName}):`, JSON.stringify(stats))
          assert.isAbove(stats.charges, 0)
          assert.isAbove(stats.fenced, 0)
          assert.isAbove(stats.replays, 0)
        }),
      120_000
    )
  })
})
