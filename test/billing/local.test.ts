import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Admin } from "../../src/operator/Admin.ts"
import { accountRow, post, signIn } from "../identity/support.ts"
import { callTool, connect, modes } from "../mcp/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { moneyOf, pay, startCheckout } from "./support.ts"

const freshIp = ipSequence("10.63")
const packs = [
  { pack: "flex", mode: "one_time", price: 2_000, credits: 10_000 },
  { pack: "production", mode: "subscription", price: 9_900, credits: 75_000 }
] as const

describe(`local rail checkouts over HTTP (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    for (const pack of packs) {
      it.effect(`${pack.pack} with a spend key: the same key, credited once, plan ${pack.pack}`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key, account_id } = yield* app.mint(ip)
          const started = yield* startCheckout(app, { pack: pack.pack }, { key, ip })
          assert.strictEqual(started.mode, pack.mode)
          assert.strictEqual(started.price_usd_cents, pack.price)
          assert.strictEqual(
            pack.mode === "one_time" ? started.credits : started.credits_per_month,
            pack.credits
          )
          assert.match(started.session_id, /^cs_[0-9A-Za-z]{43}$/)
          assert.strictEqual(started.checkout_url, `http://svc.test/checkout/${started.session_id}`)
          const open = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.deepStrictEqual(open.body, {
            session_id: started.session_id,
            status: "open",
            pack: pack.pack,
            rail: "local",
            account_id
          })
          const before = yield* app.call("/v1/usage", { key, ip })
          assert.isUndefined(before.body.purchases)
          assert.isUndefined(before.body.subscription)
          assert.strictEqual((yield* pay(app, started.checkout_url)).status, 303)
          const read = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.strictEqual(read.body.status, "paid")
          assert.strictEqual(read.body.account_id, account_id)
          assert.isUndefined(read.body.api_key)
          const usage = yield* app.call("/v1/usage", {
            key,
            ip,
            idempotencyKey: crypto.randomUUID()
          })
          assert.strictEqual(usage.status, 200)
          assert.strictEqual(usage.body.plan, pack.pack)
          assert.strictEqual(usage.body.balance.purchased, pack.credits)
          assert.strictEqual(usage.body.purchases.count, 1)
          assert.match(usage.body.purchases.last_purchase_at, /^\d{4}-\d\d-\d\dT/)
          if (pack.mode === "subscription") {
            assert.strictEqual(usage.body.subscription.pack, "production")
            assert.strictEqual(usage.body.subscription.rail, "local")
            assert.strictEqual(usage.body.subscription.status, "active")
            assert.isFalse(usage.body.subscription.cancel_at_period_end)
            const days =
              (Date.parse(usage.body.subscription.current_period_end) -
                Date.parse(usage.body.purchases.last_purchase_at)) /
              86_400_000
            assert.closeTo(days, 30, 0.01)
          } else {
            assert.isUndefined(usage.body.subscription)
          }
          // MCP's get_usage is the same report.
          const client = yield* connect(`${app.url}/mcp`, { key, ip }, modes[0]!)
          const tool = yield* callTool(client, "get_usage", {})
          assert.deepStrictEqual(tool.structured.purchases, usage.body.purchases)
          assert.deepStrictEqual(tool.structured.subscription, usage.body.subscription)
          const money = yield* moneyOf(account_id)
          assert.strictEqual(money.purchases, 1)
          assert.strictEqual(money.balance, pack.credits)
        })
      )

      it.effect(`${pack.pack} with a management token and account_id credits that account`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key, account_id } = yield* app.mint(ip)
          const email = `buyer-${pack.pack}@billing.test`
          const session = yield* signIn(app, email, { key, ip })
          const grant = session.grant_credits
          const started = yield* startCheckout(
            app,
            { pack: pack.pack, account_id },
            { key: session.management_token, ip }
          )
          yield* pay(app, started.checkout_url)
          const read = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.strictEqual(read.body.status, "paid")
          assert.strictEqual(read.body.account_id, account_id)
          assert.isUndefined(read.body.api_key)
          const row = yield* accountRow(account_id)
          assert.strictEqual(row.plan, pack.pack)
          assert.strictEqual(row.balance, pack.credits)
          assert.strictEqual(row.grant, grant)
          const foreign = yield* post(
            app,
            "/v1/checkout",
            { pack: pack.pack, account_id: "acct_someoneelse" },
            { key: session.management_token, ip }
          )
          assert.notStrictEqual(foreign.status, 200)
        })
      )

      it.effect(`${pack.pack} keyless: a new account, its key shown once, then it spends`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const started = yield* startCheckout(app, { pack: pack.pack }, { ip })
          const open = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.strictEqual(open.body.status, "open")
          assert.isUndefined(open.body.account_id)
          yield* pay(app, started.checkout_url)
          const first = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.strictEqual(first.body.status, "paid")
          assert.match(first.body.api_key, /^svc_[0-9A-Za-z]{32}$/)
          const second = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.isUndefined(second.body.api_key)
          assert.strictEqual(second.body.account_id, first.body.account_id)
          const key = first.body.api_key as string
          const spent = yield* app.call("/v1/profnet/test-echo?value=x&cost=7&freshness=realtime", {
            key,
            ip,
            idempotencyKey: crypto.randomUUID()
          })
          assert.strictEqual(spent.status, 200, JSON.stringify(spent.body))
          // Realtime costs more than the quoted 7; all of it from the purchased balance.
          const { funding } = spent.body.receipt
          assert.strictEqual(funding.free_tier + funding.grant, 0)
          assert.isAbove(funding.balance, 7)
          const money = yield* moneyOf(first.body.account_id)
          assert.strictEqual(money.plan, pack.pack)
          assert.strictEqual(money.balance, pack.credits - funding.balance)
          assert.strictEqual(money.purchases, 1)
        })
      )
    }

    it.effect(
      "a token governing two accounts must name one; a suspended account's key cannot start a checkout",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const admin = yield* Admin
          const ip = freshIp()
          const first = yield* app.mint(ip)
          const second = yield* app.mint(freshIp())
          const email = "two-accounts@billing.test"
          yield* signIn(app, email, { key: first.key, ip })
          const session = yield* signIn(app, email, { key: second.key, ip })
          const unnamed = yield* post(
            app,
            "/v1/checkout",
            { pack: "flex" },
            { key: session.management_token, ip }
          )
          assert.strictEqual(unnamed.status, 401)
          assert.strictEqual(unnamed.body.code, "AUTH_REQUIRED")
          assert.include(JSON.stringify(unnamed.body), first.account_id)
          assert.include(JSON.stringify(unnamed.body), second.account_id)
          const named = yield* startCheckout(
            app,
            { pack: "flex", account_id: second.account_id },
            { key: session.management_token, ip }
          )
          yield* pay(app, named.checkout_url)
          assert.strictEqual((yield* moneyOf(second.account_id)).purchased, 10_000)
          assert.strictEqual((yield* moneyOf(first.account_id)).purchased, 0)

          yield* Effect.orDie(admin.setState(first.account_id, "suspended"))
          const suspended = yield* post(app, "/v1/checkout", { pack: "flex" }, { key: first.key, ip })
          assert.strictEqual(suspended.status, 401)
          assert.strictEqual(suspended.body.code, "UNAUTHORIZED")
          const garbage = yield* post(app, "/v1/checkout", { pack: "flex" }, { key: "not-a-key", ip })
          assert.strictEqual(garbage.status, 401)
          assert.strictEqual(garbage.body.code, "UNAUTHORIZED")
        })
    )

    it.effect("the pay button twice, and five pay requests at once, credit once", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        const once = yield* startCheckout(app, { pack: "flex" }, { key, ip })
        assert.strictEqual((yield* pay(app, once.checkout_url)).status, 303)
        assert.strictEqual((yield* pay(app, once.checkout_url)).status, 303)
        assert.strictEqual((yield* moneyOf(account_id)).balance, 10_000)
        const racing = yield* startCheckout(app, { pack: "flex" }, { key, ip })
        const answers = yield* Effect.all(
          Array.from({ length: 5 }, () => pay(app, racing.checkout_url)),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(
          answers.map((answer) => answer.status),
          [303, 303, 303, 303, 303]
        )
        const money = yield* moneyOf(account_id)
        assert.strictEqual(money.purchases, 2)
        assert.strictEqual(money.purchased, 20_000)
        assert.strictEqual(money.balance, 20_000)
      })
    )

    it.effect("a keyless checkout paid five times at once makes one account and one key", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const started = yield* startCheckout(app, { pack: "production" }, { ip })
        yield* Effect.all(
          Array.from({ length: 5 }, () => pay(app, started.checkout_url)),
          { concurrency: "unbounded" }
        )
        const reads = yield* Effect.all(
          Array.from({ length: 4 }, () => app.call(`/v1/checkout/${started.session_id}`)),
          { concurrency: "unbounded" }
        )
        const keys = reads.map((read) => read.body.api_key).filter((key) => key !== undefined)
        assert.strictEqual(keys.length, 1)
        const accountId = reads[0]!.body.account_id as string
        assert.isTrue(reads.every((read) => read.body.account_id === accountId))
        const money = yield* moneyOf(accountId)
        assert.strictEqual(money.purchases, 1)
        assert.strictEqual(money.balance, 75_000)
      })
    )

    it.effect("unknown pack or rail is INVALID_INPUT with param, also with a key; nothing is stored", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key, account_id } = yield* app.mint(ip)
        for (const [body, param] of [
          [{ pack: "gold" }, "pack"],
          [{ pack: "flex", rail: "paypal" }, "rail"],
          [{ pack: "production", rail: "stripe" }, "rail"],
          [{ pack: "FLEX" }, "pack"]
        ] as const) {
          for (const auth of [{ ip }, { key, ip }]) {
            const reply = yield* post(app, "/v1/checkout", body, auth)
            assert.strictEqual(reply.status, 400, JSON.stringify(body))
            assert.strictEqual(reply.body.code, "INVALID_INPUT")
            assert.strictEqual(reply.body.param, param)
          }
        }
        const missing = yield* post(app, "/v1/checkout", {}, { key, ip })
        assert.strictEqual(missing.status, 400)
        assert.strictEqual(missing.body.code, "INVALID_INPUT")
        assert.strictEqual((yield* moneyOf(account_id)).purchases, 0)
      })
    )

    it.effect("an unknown or malformed session is NOT_FOUND on GET, on the page and on pay", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (const id of [`cs_${"a".repeat(43)}`, "cs_short", "nothing", `cs_${"Z".repeat(44)}`]) {
          const read = yield* app.call(`/v1/checkout/${id}`)
          assert.strictEqual(read.status, 404, id)
          assert.strictEqual(read.body.code, "NOT_FOUND")
          const paid = yield* pay(app, `http://svc.test/checkout/${id}`)
          assert.strictEqual(paid.status, 404, id)
          const page = yield* app.call(`/checkout/${id}`)
          assert.strictEqual(page.status, 404, id)
        }
      })
    )
  })
})
