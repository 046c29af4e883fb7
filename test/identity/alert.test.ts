import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Admin } from "../../src/operator/Admin.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { accountRow, mailCount, mailTo, post, signIn, spend } from "./support.ts"

const freshIp = ipSequence("10.66")

/**
 * A claimed account (10,000 grant credits) moved to plan flex, so no free budget stands between a
 * call and the spendable credits; and its management token.
 */
const claimedPaid = (email: string) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const admin = yield* Admin
    const ip = freshIp()
    const minted = yield* app.mint(ip)
    const owner = yield* signIn(app, email, { key: minted.key, ip })
    assert.strictEqual(owner.grant_credits, 10_000)
    yield* Effect.orDie(admin.setPlan(minted.account_id, "flex"))
    return { ...minted, ip, token: owner.management_token }
  })

const spendable = (accountId: string) => Effect.map(accountRow(accountId), (row) => row.grant + row.balance)

describe(`balance alert (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("one email per crossing below the threshold; a top-up re-arms it; 0 turns it off", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const email = "alert@example.com"
        const paid = yield* claimedPaid(email)
        const { ip, key, token } = paid
        const set = yield* post(app, "/v1/alert", { threshold: 9_950 }, { key: token, ip })
        assert.strictEqual(set.status, 200, JSON.stringify(set.body))
        assert.deepStrictEqual(set.body, {
          account_id: paid.account_id,
          threshold: 9_950,
          balance_credits: 0,
          grant_credits: 10_000
        })
        const charge = (cost: number) =>
          Effect.gen(function* () {
            const reply = yield* spend(app, key, ip, cost)
            assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
            assert.strictEqual(reply.body.receipt.funding.free_tier, 0)
          })
        yield* charge(20) // 9,980
        yield* charge(20) // 9,960
        assert.strictEqual(yield* mailCount(email, "alert"), 0)
        yield* charge(20) // 9,940: crossed
        assert.strictEqual(yield* mailCount(email, "alert"), 1)
        const [alert] = (yield* mailTo(email)).filter((mail) => mail.kind === "alert")
        assert.include(alert!.subject, "9950")
        assert.include(alert!.text, "9940")
        for (let i = 0; i < 4; i++) yield* charge(20) // 9,860, still below
        assert.strictEqual(yield* mailCount(email, "alert"), 1)

        // A top-up to exactly the threshold re-arms it (at or above); the next crossing mails again.
        yield* Effect.orDie(
          admin.credit(paid.account_id, 9_950 - (yield* spendable(paid.account_id)), "balance", "top-up")
        )
        assert.strictEqual(yield* spendable(paid.account_id), 9_950)
        assert.strictEqual(yield* mailCount(email, "alert"), 1)
        yield* charge(1)
        assert.strictEqual(yield* mailCount(email, "alert"), 2)
        yield* charge(1)
        assert.strictEqual(yield* mailCount(email, "alert"), 2)

        // A top-up that stays below re-arms nothing.
        assert.strictEqual(yield* spendable(paid.account_id), 9_948)
        yield* Effect.orDie(admin.credit(paid.account_id, 1, "balance", "small top-up"))
        yield* charge(5)
        assert.strictEqual(yield* mailCount(email, "alert"), 2)

        // Setting a threshold above the current credits does not mail; going above and back does.
        const above = yield* post(app, "/v1/alert", { threshold: 20_000 }, { key: token, ip })
        assert.strictEqual(above.status, 200)
        yield* charge(5)
        assert.strictEqual(yield* mailCount(email, "alert"), 2)

        // Off: no mail for any crossing.
        const off = yield* post(app, "/v1/alert", { threshold: 0 }, { key: token, ip })
        assert.strictEqual(off.body.threshold, 0)
        yield* Effect.orDie(admin.credit(paid.account_id, 50_000, "balance", "top-up"))
        yield* charge(1)
        assert.strictEqual(yield* mailCount(email, "alert"), 2)
      })
    )

    it.effect("a call that is refused or fails charges nothing and sends no alert", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const email = "alert-fail@example.com"
        const { ip, key, token, account_id } = yield* claimedPaid(email)
        yield* post(app, "/v1/alert", { threshold: 9_999 }, { key: token, ip })
        const failed = yield* app.call("/v1/profnet/test-echo?value=v&cost=50&fail=upstream", {
          key,
          ip,
          idempotencyKey: crypto.randomUUID()
        })
        assert.notStrictEqual(failed.status, 200)
        assert.strictEqual(yield* spendable(account_id), 10_000)
        assert.strictEqual(yield* mailCount(email, "alert"), 0)
        // A call refunded in full is no crossing either.
        const refunded = yield* app.call("/v1/profnet/test-echo?value=v&cost=50&refund=50", {
          key,
          ip,
          idempotencyKey: crypto.randomUUID()
        })
        assert.strictEqual(refunded.status, 200, JSON.stringify(refunded.body))
        assert.strictEqual(yield* spendable(account_id), 10_000)
        assert.strictEqual(yield* mailCount(email, "alert"), 0)
        assert.strictEqual((yield* spend(app, key, ip, 2)).status, 200)
        assert.strictEqual(yield* mailCount(email, "alert"), 1)
      })
    )

    it.effect("concurrent charges from two keys of one account never send two alerts", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (let round = 0; round < 3; round++) {
          const email = `alert-race${round}@example.com`
          const { ip, key, token, account_id } = yield* claimedPaid(email)
          const second = yield* post(app, "/v1/keys", { label: "second" }, { key: token, ip })
          assert.strictEqual(second.status, 201)
          yield* post(app, "/v1/alert", { threshold: 9_990 }, { key: token, ip })
          const replies = yield* Effect.all(
            Array.from({ length: 8 }, (_, i) => spend(app, i % 2 === 0 ? key : second.body.key, ip, 6)),
            { concurrency: "unbounded" }
          )
          const charged = replies.filter((reply) => reply.status === 200).length
          for (const reply of replies)
            if (reply.status !== 200) assert.strictEqual(reply.body.code, "CONCURRENCY_LIMIT")
          assert.isAtLeast(charged, 1)
          assert.strictEqual(yield* spendable(account_id), 10_000 - 6 * charged)
          assert.strictEqual(yield* mailCount(email, "alert"), charged >= 2 ? 1 : 0, `round ${round}`)
          // Serially past the threshold: still one mail in all.
          for (let i = 0; i < 3; i++) assert.strictEqual((yield* spend(app, key, ip, 6)).status, 200)
          assert.strictEqual(yield* mailCount(email, "alert"), 1, `round ${round}`)
        }
      })
    )
  })
})
