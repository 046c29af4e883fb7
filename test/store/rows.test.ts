import { assert, describe, it, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import { ServicesLayer } from "../../src/service.ts"
import { Accounts } from "../../src/services/Accounts.ts"
import * as Row from "../../src/store/rows.ts"
import { freshDatabase, storeName } from "../support/database.ts"

const decodeInt = Schema.decodeUnknownExit(Row.Int)

/** The defect a read died with, if it was an unreadable row. */
const unreadable = <A, E>(exit: Exit.Exit<A, E>) => {
  const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
  return defect instanceof Row.UnreadableRow ? defect : undefined
}

describe("row schemas", () => {
  it("an integer column is a safe integer from a number, a bigint or digits", () => {
    for (const [input, expected] of [
      [5, 5],
      [5n, 5],
      ["5", 5],
      ["-12", -12],
      [1_700_000_000_000n, 1_700_000_000_000]
    ] as const) {
      assert.deepStrictEqual(decodeInt(input), Exit.succeed(expected), String(input))
    }
    for (const input of [1.5, "1.5", "", " 5", "five", 2n ** 60n, "1180591620717411303424", null, true]) {
      assert.isTrue(Exit.isFailure(decodeInt(input)), String(input))
    }
  })

  it("entitlements are a comma-separated list of known platforms", () => {
    const decode = Schema.decodeUnknownSync(Row.Platforms)
    assert.deepStrictEqual(decode("profnet,forum"), ["profnet", "forum"])
    assert.deepStrictEqual(decode(""), [])
    assert.throws(() => decode("profnet,nowhere"))
  })

  it.effect("a row that does not decode is a defect naming what was read", () =>
    Effect.gen(function* () {
      const decode = Row.decoder(Schema.Struct({ n: Row.Int }), "things")
      assert.deepStrictEqual(yield* decode([{ n: "7", extra: true }]), [{ n: 7 }])
      const exit = yield* Effect.exit(decode([{ n: 1 }, { n: "seven" }]))
      const defect = unreadable(exit)
      assert.isDefined(defect)
      assert.match(defect!.message, /^things: /)
      assert.include(defect!.message, '[1]["n"]')
    })
  )
})

const services = ServicesLayer.pipe(Layer.provideMerge(freshDatabase), Layer.provide(AppConfig.layerTest()))

describe(`rows as the stores return them (${storeName})`, () => {
  layer(services, { timeout: 60_000 })((it) => {
    it.effect("int8 columns read as numbers; a value the code cannot read is a defect", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const accounts = yield* Accounts
        const minted = yield* accounts.mintTrial("10.70.0.1")
        const id = minted.account.id
        assert.strictEqual(minted.account.plan, "trial")
        assert.deepStrictEqual(minted.account.entitlements, ["profnet", "forum", "microblog"])

        yield* sql`UPDATE accounts SET balance_credits = ${2 ** 40} WHERE id = ${id}`
        assert.strictEqual((yield* accounts.get(id))?.balanceCredits, 2 ** 40)

        // Beyond 2^53 an int8 cannot be a number without losing credits.
        yield* sql`UPDATE accounts SET balance_credits = ${2n ** 60n} WHERE id = ${id}`
        const huge = unreadable(yield* Effect.exit(accounts.get(id)))
        assert.isDefined(huge)
        assert.match(huge!.message, /^accounts: /)

        yield* sql`UPDATE accounts SET balance_credits = 0, entitlements = 'profnet,nowhere' WHERE id = ${id}`
        const unknownPlatform = unreadable(yield* Effect.exit(accounts.get(id)))
        assert.isDefined(unknownPlatform)
        assert.include(unknownPlatform!.message, "entitlements")
      }).pipe(Effect.orDie)
    )
  })
})
