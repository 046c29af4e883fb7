import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import { AppConfig } from "../../src/config.ts"
import { Accounts } from "../../src/services/Accounts.ts"
import { Audit } from "../../src/services/Audit.ts"
import { Credits } from "../../src/services/Credits.ts"
import { Ids, idBody } from "../../src/services/Ids.ts"
import { KeyMemory } from "../../src/services/KeyMemory.ts"
import { Outbox } from "../../src/services/mail/Outbox.ts"
import { RateLimits } from "../../src/services/RateLimits.ts"
import { Settings } from "../../src/services/Settings.ts"
import { WebhookEvents, WebhookWake } from "../../src/services/WebhookEvents.ts"
import { Notifications } from "../../src/store/Notifications.ts"
import { freshDatabase, storeName } from "../support/database.ts"

describe("Ids.layerTest", () => {
  it.effect("counts ids per prefix from 1, afresh for each build; secrets stay random", () =>
    Effect.gen(function* () {
      const ids = yield* Ids
      assert.deepStrictEqual(
        [yield* ids.newId("rcpt"), yield* ids.newId("rcpt"), yield* ids.newId("acct")],
        ["rcpt_test000001", "rcpt_test000002", "acct_test000001"]
      )
      const rebuilt = yield* Effect.provide(
        Ids.use((fresh) => fresh.newId("rcpt")),
        Layer.fresh(Ids.layerTest)
      )
      assert.strictEqual(rebuilt, "rcpt_test000001")
      const [one, two] = [yield* ids.secretBytes, yield* ids.secretBytes]
      assert.strictEqual(one.length, 48)
      assert.notDeepEqual(one, two)
    }).pipe(Effect.provide(Ids.layerTest))
  )
})

describe("Ids.layer", () => {
  it("names an id by its creation time in hex, then 14 random base62 characters", () => {
    const at = Date.UTC(2026, 10, 29, 21, 40)
    const body = idBody(at)
    assert.match(body, /^[0-9a-f]{11}[0-9A-Za-z]{14}$/)
    assert.strictEqual(Number.parseInt(body.slice(0, 11), 16), at)
    const many = new Set(Array.from({ length: 20_000 }, () => idBody(at)))
    assert.strictEqual(many.size, 20_000)
    const tails = [...many].map((id) => id.slice(11)).join("")
    for (const char of "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
      assert.isTrue(tails.includes(char), char)
  })

  it("sorts ids by the time they were made, whatever their random part", () =>
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 16 ** 11 - 2 }),
        fc.integer({ min: 1, max: 10 * 365 * 86_400_000 }),
        (earlier, later) => {
          const after = Math.min(earlier + later, 16 ** 11 - 1)
          assert.isTrue(idBody(earlier) < idBody(after))
        }
      )
    ))

  it.effect("gives ids with the prefix asked for, each new", () =>
    Effect.gen(function* () {
      const ids = yield* Ids
      const [one, two] = [yield* ids.newId("rcpt"), yield* ids.newId("rcpt")]
      assert.match(one, /^rcpt_[0-9a-f]{11}[0-9A-Za-z]{14}$/)
      assert.notStrictEqual(one, two)
      assert.isTrue(Math.abs(Number.parseInt(one.slice(5, 16), 16) - Date.now()) < 60_000)
    }).pipe(Effect.provide(Ids.layer))
  )
})

const services = Layer.mergeAll(Accounts.layer, Credits.layer).pipe(
  Layer.provideMerge(
    Layer.mergeAll(WebhookEvents.layer.pipe(Layer.provideMerge(WebhookWake.layer)), Audit.layer)
  ),
  Layer.provideMerge(Outbox.layer),
  Layer.provideMerge(RateLimits.layerMemory),
  Layer.provideMerge(Settings.layer),
  Layer.provideMerge(KeyMemory.layer),
  Layer.provideMerge(Notifications.layer),
  Layer.provideMerge(RateLimits.layerMemory),
  Layer.provideMerge(Ids.layerTest),
  Layer.provideMerge(freshDatabase),
  Layer.provide(AppConfig.layerTest())
)

describe(`services over deterministic ids (${storeName})`, () => {
  layer(services, { timeout: 60_000 })((it) => {
    it.effect("accounts, keys and credit events are named in the order they are made", () =>
      Effect.gen(function* () {
        const accounts = yield* Accounts
        const ledger = yield* Credits
        const sql = yield* SqlClient.SqlClient
        const first = yield* accounts.mintTrial("10.71.0.1")
        const second = yield* accounts.mintTrial("10.71.0.2")
        assert.deepStrictEqual(
          [first.account.id, first.key.id, second.account.id, second.key.id],
          ["acct_test000001", "key_test000001", "acct_test000002", "key_test000002"]
        )
        assert.isTrue(
          yield* ledger.credit({ accountId: "acct_test000002", credits: 50, kind: "grant", reason: "t" })
        )
        assert.isFalse(
          yield* ledger.credit({ accountId: "acct_test000009", credits: 50, kind: "grant", reason: "t" })
        )
        const events = yield* sql<{ readonly id: string; readonly account_id: string }>`
          SELECT id, account_id FROM credit_events ORDER BY id`
        assert.deepStrictEqual(events, [{ id: "cred_test000001", account_id: "acct_test000002" }])
        assert.strictEqual((yield* accounts.findByKey(second.secret))?.account.grantCredits, 50)
      }).pipe(Effect.orDie)
    )

    it.effect("the store orders ids as they were made (its collation compares them bytewise)", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const start = Date.UTC(2026, 0, 1)
        const made = Array.from({ length: 200 }, (_, n) => `rcpt_${idBody(start + n * 997_001)}`)
        const values = made.map((id) => `('${id}')`).join(", ")
        const sorted = yield* sql.unsafe<{ readonly id: string }>(
          `SELECT id FROM (VALUES ${values}) v (id) ORDER BY id`
        )
        assert.deepStrictEqual(
          sorted.map(({ id }) => id),
          made
        )
      }).pipe(Effect.orDie)
    )

    it.effect("the mint's per-IP limit is the service's: past it, RATE_LIMITED and no account made", () =>
      Effect.gen(function* () {
        const accounts = yield* Accounts
        const sql = yield* SqlClient.SqlClient
        const ip = "10.71.9.9"
        for (let i = 0; i < 5; i++) yield* accounts.mintTrial(ip)
        const refused = yield* Effect.flip(accounts.mintTrial(ip))
        assert.strictEqual(refused._tag, "RateLimited")
        assert.include(refused.message, "At most 5 keys per IP per hour")
        const made = yield* sql<{
          readonly n: number
        }>`SELECT count(*)::int AS n FROM accounts WHERE created_ip = ${ip}`
        assert.strictEqual(made[0]!.n, 5)
      }).pipe(Effect.orDie)
    )
  })
})
