import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { csrfToken } from "../../src/surfaces/http/pages/respond.ts"
import { post, signIn } from "../identity/support.ts"
import { type Reply, TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const form = "application/x-www-form-urlencoded"

/** Addresses inside one /64, each different, as a client rotating through its network sends them. */
const rotating = (network: string) => {
  let n = 0
  return () => `${network}:${(++n).toString(16)}:${(n * 7).toString(16)}:${(n * 13).toString(16)}:1`
}

const sessionCount = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM checkout_sessions`
  return Number(rows[0]!.n)
}).pipe(Effect.orDie)

const assertRateLimited = (reply: Reply, what: string) => {
  assert.strictEqual(reply.status, 429, `${what}: ${JSON.stringify(reply.body)}`)
  assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
  assert.strictEqual(reply.body.code, "RATE_LIMITED")
  assert.isAbove(reply.body.retry_after_seconds, 0)
  assert.isAtMost(reply.body.retry_after_seconds, 3600)
  assert.strictEqual(reply.headers.get("retry-after"), String(reply.body.retry_after_seconds))
}

/** `POST /upgrade`, the pack picker's form, as a browser sends it (the redirect not followed). */
const upgradeForm = (app: TestApp["Service"], body: string, ip: string) =>
  Effect.promise(async (): Promise<Reply> => {
    const response = await fetch(`${app.url}/upgrade`, {
      method: "POST",
      headers: { "content-type": form, "x-forwarded-for": ip },
      body,
      redirect: "manual"
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text, text }
  })

/**
 * The audit made 20,522 keyless checkout sessions from one IP in 90 s. Creation is bounded where
 * every entrance starts a checkout (`Checkout.start`): without a credential per IP (an IPv6 client
 * by its /64), with one per account.
 */
describe(`checkout creation limits (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 120_000, excludeTestServices: true })((it) => {
    const perIp = defaultPolicy.checkoutsPerIpHour
    const perAccount = defaultPolicy.checkoutsPerAccountHour

    it.effect("the defaults: 10 keyless checkouts per IP per hour, 30 per account with a credential", () =>
      Effect.sync(() => {
        assert.strictEqual(perIp, 10)
        assert.strictEqual(perAccount, 30)
      })
    )

    it.effect(
      "the 11th keyless checkout from one IP is RATE_LIMITED and stores nothing; another IP is served",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.90.0.1"
          // Refused input creates nothing and spends nothing.
          for (let i = 0; i < 3; i++) {
            const bad = yield* post(app, "/v1/checkout", { pack: "gold" }, { ip })
            assert.strictEqual(bad.status, 400)
          }
          for (let i = 0; i < perIp; i++) {
            const started = yield* post(
              app,
              "/v1/checkout",
              { pack: i % 2 === 0 ? "flex" : "production" },
              { ip }
            )
            assert.strictEqual(started.status, 200, `checkout ${i + 1}: ${JSON.stringify(started.body)}`)
          }
          const before = yield* sessionCount
          const refused = yield* post(app, "/v1/checkout", { pack: "flex" }, { ip })
          assertRateLimited(refused, "the 11th")
          assert.include(refused.body.detail ?? refused.body.message, `${perIp}`)
          assert.strictEqual(yield* sessionCount, before, "nothing created")
          const other = yield* post(app, "/v1/checkout", { pack: "flex" }, { ip: "10.90.0.2" })
          assert.strictEqual(other.status, 200, JSON.stringify(other.body))
        })
    )

    it.effect("rotating IPv6 addresses inside one /64 share its 10; the next /64 is another client", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const next = rotating("2001:db8:ee:1")
        const statuses: Array<number> = []
        for (let i = 0; i < perIp + 2; i++) {
          statuses.push((yield* post(app, "/v1/checkout", { pack: "flex" }, { ip: next() })).status)
        }
        assert.deepStrictEqual(statuses, [...Array.from({ length: perIp }, () => 200), 429, 429])
        const other = yield* post(app, "/v1/checkout", { pack: "flex" }, { ip: "2001:db8:ee:2::1" })
        assert.strictEqual(other.status, 200, JSON.stringify(other.body))
      })
    )

    it.effect(
      "with a credential: 30 per account per hour, by spend key and management token together; other accounts and keyless unaffected",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.90.1.1"
          const { key, account_id } = yield* app.mint(ip)
          const { management_token } = yield* signIn(app, "limits@billing.test", { key, ip })
          for (let i = 0; i < perAccount; i++) {
            // Half by the key, half by the management token naming the same account.
            const auth = i % 2 === 0 ? { key, ip } : { key: management_token, ip }
            const started = yield* post(app, "/v1/checkout", { pack: "flex", account_id }, auth)
            assert.strictEqual(started.status, 200, `checkout ${i + 1}: ${JSON.stringify(started.body)}`)
          }
          const before = yield* sessionCount
          assertRateLimited(yield* post(app, "/v1/checkout", { pack: "flex" }, { key, ip }), "the key's 31st")
          assertRateLimited(
            yield* post(
              app,
              "/v1/checkout",
              { pack: "production", account_id },
              { key: management_token, ip }
            ),
            "the token's 31st"
          )
          // From another address the account is still the one counted.
          assertRateLimited(
            yield* post(app, "/v1/checkout", { pack: "flex" }, { key, ip: "10.90.1.2" }),
            "the key from elsewhere"
          )
          assert.strictEqual(yield* sessionCount, before, "nothing created")
          // Another account of the same IP, and a keyless checkout of that IP, count elsewhere.
          const other = yield* app.mint(ip)
          assert.strictEqual(
            (yield* post(app, "/v1/checkout", { pack: "flex" }, { key: other.key, ip })).status,
            200
          )
          assert.strictEqual((yield* post(app, "/v1/checkout", { pack: "flex" }, { ip })).status, 200)
        })
    )

    it.effect(
      "POST /upgrade past the per-IP limit answers a 429 page with Retry-After, shared with the API's keyless checkouts",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.90.2.1"
          const { account_id } = yield* app.mint("10.90.2.200")
          for (let i = 0; i < perIp; i++) {
            // Keyless forms and forms naming an account (no credential either way) count per IP.
            const body = i % 3 === 0 ? `pack=flex&account=${account_id}` : "pack=production"
            const started = yield* upgradeForm(app, body, ip)
            assert.strictEqual(started.status, 303, `form ${i + 1}: ${started.body}`)
          }
          const before = yield* sessionCount
          for (const body of ["pack=flex", `pack=flex&account=${account_id}`]) {
            const refused = yield* upgradeForm(app, body, ip)
            assert.strictEqual(refused.status, 429, refused.body)
            assert.match(refused.headers.get("content-type") ?? "", /^text\/html/)
            const retryAfter = Number(refused.headers.get("retry-after"))
            assert.isAbove(retryAfter, 0)
            assert.isAtMost(retryAfter, 3600)
            assert.strictEqual(refused.headers.get("cache-control"), "no-store")
            assert.include(refused.body, "<h1>Too many checkouts</h1>")
            assert.include(refused.body, `at most ${perIp} checkouts an hour`)
            assert.isNull(refused.headers.get("location"))
          }
          // One count for both entrances: the API's keyless checkout from that IP is refused too.
          assertRateLimited(
            yield* post(app, "/v1/checkout", { pack: "flex" }, { ip }),
            "the API after the form"
          )
          assert.strictEqual(yield* sessionCount, before, "nothing created")
          // And the form from another IP is served.
          assert.strictEqual((yield* upgradeForm(app, "pack=flex", "10.90.2.2")).status, 303)
        })
    )
  })
})

describe(`checkout creation limits on the dashboard (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "a pack bought on the dashboard counts for its account; past the limit its page answers 429",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.90.3.1"
          const owner = yield* signIn(app, "dashboard-limits@billing.test", { ip })
          const accountId = owner.accounts[0]!.account_id
          const buyOnDashboard = Effect.promise(async (): Promise<Reply> => {
            const response = await fetch(`${app.url}/dashboard/packs`, {
              method: "POST",
              headers: {
                "content-type": form,
                "x-forwarded-for": ip,
                cookie: `svc_session=${owner.management_token}`
              },
              body: `csrf=${csrfToken(owner.management_token)}&account=${accountId}&pack=flex`,
              redirect: "manual"
            })
            const text = await response.text()
            return { status: response.status, headers: response.headers, body: text, text }
          })
          assert.strictEqual((yield* buyOnDashboard).status, 303)
          const perAccount = defaultPolicy.checkoutsPerAccountHour
          for (let i = 1; i < perAccount; i++) {
            const started = yield* post(
              app,
              "/v1/checkout",
              { pack: "flex" },
              { key: owner.management_token, ip }
            )
            assert.strictEqual(started.status, 200, `checkout ${i + 1}: ${JSON.stringify(started.body)}`)
          }
          assertRateLimited(
            yield* post(app, "/v1/checkout", { pack: "flex" }, { key: owner.management_token, ip }),
            "the token's 31st"
          )
          const refused = yield* buyOnDashboard
          assert.strictEqual(refused.status, 429, refused.body)
          assert.isAbove(Number(refused.headers.get("retry-after")), 0)
          assert.include(
            refused.body,
            `Too many checkouts: at most ${perAccount} checkouts an hour for one account`
          )
          assert.include(refused.body, "<h1>Billing</h1>")
        })
    )
  })
})

describe(`checkout creation limits as configured (${storeName})`, () => {
  layer(
    testApp(testOperations, {
      policy: { ...defaultPolicy, checkoutsPerIpHour: 2, checkoutsPerAccountHour: 3 }
    }),
    { timeout: 60_000, excludeTestServices: true }
  )((it) => {
    it.effect("CHECKOUTS_PER_IP_HOUR and CHECKOUTS_PER_ACCOUNT_HOUR set the numbers", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.91.0.1"
        const keyless = []
        for (let i = 0; i < 3; i++)
          keyless.push((yield* post(app, "/v1/checkout", { pack: "flex" }, { ip })).status)
        assert.deepStrictEqual(keyless, [200, 200, 429])
        const { key } = yield* app.mint(ip)
        const keyed = []
        for (let i = 0; i < 4; i++)
          keyed.push((yield* post(app, "/v1/checkout", { pack: "flex" }, { key, ip })).status)
        assert.deepStrictEqual(keyed, [200, 200, 200, 429])
      })
    )
  })
})
