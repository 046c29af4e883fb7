import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { ManagementTokens } from "../../src/services/ManagementTokens.ts"
import { SignIn } from "../../src/services/SignIn.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { codeFor, latestMail, linkTokenIn, mailTo, post, signIn } from "./support.ts"

const freshIp = ipSequence("10.63")
let emails = 0
const freshEmail = (what: string) => `${what}-${++emails}@example.com`

/** The server runs on the TestClock here: code, link and token lifetimes and limit windows move with it. */
describe(`identity limits and lifetimes on the TestClock (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000 })((it) => {
    for (const [path, what] of [
      ["/v1/auth/email/start", "sign-in"],
      ["/v1/recover", "recovery"]
    ] as const) {
      it.effect(
        `${what}: 5 per IP per 15 minutes, then RATE_LIMITED until the window passes`,
        () =>
          Effect.gen(function* () {
            const app = yield* TestApp
            const ip = freshIp()
            const sent = []
            for (let i = 0; i < 5; i++) {
              const email = freshEmail(`${what}-ip`)
              sent.push(email)
              const reply = yield* post(app, path, { email }, { ip })
              assert.strictEqual(reply.status, 202, JSON.stringify(reply.body))
            }
            const refusedEmail = freshEmail(`${what}-ip`)
            const refused = yield* post(app, path, { email: refusedEmail }, { ip })
            assert.strictEqual(refused.status, 429)
            assert.strictEqual(refused.body.code, "RATE_LIMITED")
            const retry = refused.body.retry_after_seconds
            assert.isTrue(Number.isInteger(retry) && retry >= 1 && retry <= 15 * 60, String(retry))
            // A refused start queues nothing.
            assert.deepStrictEqual(yield* mailTo(refusedEmail), [])
            // Another IP is not limited by this one.
            assert.strictEqual(
              (yield* post(app, path, { email: refusedEmail }, { ip: freshIp() })).status,
              202
            )
            yield* TestClock.adjust(`${retry - 1} seconds`)
            assert.strictEqual((yield* post(app, path, { email: freshEmail(what) }, { ip })).status, 429)
            yield* TestClock.adjust("1 second")
            const after = yield* post(app, path, { email: freshEmail(what) }, { ip })
            assert.strictEqual(after.status, 202, JSON.stringify(after.body))
          }),
        60_000
      )

      it.effect(
        `${what}: 3 per email per 10 minutes from all IPs, 3 per email and IP per hour; a refusal spends no other start`,
        () =>
          Effect.gen(function* () {
            const app = yield* TestApp
            const email = freshEmail(`${what}-email`)
            const [a, b, c] = [freshIp(), freshIp(), freshIp()]
            for (let i = 0; i < 3; i++) {
              const reply = yield* post(
                app,
                path,
                { email: i === 1 ? email.toUpperCase() : email },
                { ip: a }
              )
              assert.strictEqual(reply.status, 202, JSON.stringify(reply.body))
            }
            const mails = (yield* mailTo(email)).length
            // Another IP meets the email's ceiling, which lasts its short window.
            const ceiling = yield* post(app, path, { email }, { ip: b })
            assert.strictEqual(ceiling.status, 429)
            assert.strictEqual(ceiling.body.code, "RATE_LIMITED")
            assert.isUndefined(ceiling.body.offer)
            const retry = ceiling.body.retry_after_seconds
            assert.isTrue(Number.isInteger(retry) && retry >= 1 && retry <= 10 * 60, String(retry))
            // The first IP meets its own limit for this email, which lasts the hour.
            const own = yield* post(app, path, { email }, { ip: a })
            assert.strictEqual(own.status, 429)
            const ownRetry = own.body.retry_after_seconds
            assert.isTrue(ownRetry > 10 * 60 && ownRetry <= 60 * 60, String(ownRetry))
            assert.strictEqual((yield* mailTo(email)).length, mails, "a refused start queues nothing")
            // Refused by the email's ceiling, `b` got its IP token back: 5 starts left for other emails.
            for (let i = 0; i < 5; i++)
              assert.strictEqual((yield* post(app, path, { email: freshEmail(what) }, { ip: b })).status, 202)
            assert.strictEqual((yield* post(app, path, { email: freshEmail(what) }, { ip: b })).status, 429)
            yield* TestClock.adjust(`${retry} seconds`)
            assert.strictEqual((yield* post(app, path, { email }, { ip: c })).status, 202)
            assert.strictEqual((yield* post(app, path, { email }, { ip: a })).status, 429)
          }),
        60_000
      )
    }

    it.effect("sign-in and recovery limits are separate", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        for (let i = 0; i < 5; i++)
          assert.strictEqual(
            (yield* post(app, "/v1/auth/email/start", { email: freshEmail("sep") }, { ip })).status,
            202
          )
        assert.strictEqual(
          (yield* post(app, "/v1/auth/email/start", { email: freshEmail("sep") }, { ip })).status,
          429
        )
        assert.strictEqual(
          (yield* post(app, "/v1/recover", { email: freshEmail("sep") }, { ip })).status,
          202
        )
      })
    )

    it.effect("a sign-in code and link live 10 minutes: valid at 9:59.999, dead at 10:00", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const verify = (body: unknown) => post(app, "/v1/auth/email/verify", body, { ip: freshIp() })
        const early = freshEmail("expiry")
        const inTime = yield* codeFor(app, early, { ip: freshIp() })
        yield* TestClock.adjust(10 * 60_000 - 1)
        const ok = yield* verify({ email: early, code: inTime.code })
        assert.strictEqual(ok.status, 200, JSON.stringify(ok.body))

        const late = freshEmail("expiry")
        const tooLate = yield* codeFor(app, late, { ip: freshIp() })
        yield* TestClock.adjust("10 minutes")
        const expired = yield* verify({ email: late, code: tooLate.code })
        assert.strictEqual(expired.status, 401)
        assert.strictEqual(expired.body.code, "UNAUTHORIZED")
        const expiredLink = yield* verify({ token: tooLate.token })
        assert.strictEqual(expiredLink.status, 401)

        const link = freshEmail("expiry")
        const byLink = yield* codeFor(app, link, { ip: freshIp() })
        yield* TestClock.adjust(10 * 60_000 - 1)
        const linked = yield* verify({ token: byLink.token })
        assert.strictEqual(linked.status, 200, JSON.stringify(linked.body))
        assert.strictEqual(linked.body.email, link)
      })
    )

    it.effect("a recovery link lives one hour; a refused rekey revokes nothing", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const email = freshEmail("lifetimes")
        const minted = yield* app.mint(ip)
        const owner = yield* signIn(app, email, { key: minted.key, ip })
        assert.strictEqual(owner.claimed, minted.account_id)

        yield* post(app, "/v1/recover", { email }, { ip })
        const stale = linkTokenIn((yield* latestMail(email)).text, "/recover")
        yield* TestClock.adjust("1 hour")
        const expired = yield* post(app, "/v1/rekey", { token: stale }, { ip })
        assert.strictEqual(expired.status, 401)
        assert.strictEqual(expired.body.code, "UNAUTHORIZED")
        // Nothing was revoked by the refused rekey.
        assert.strictEqual((yield* app.call("/v1/usage", { key: minted.key, ip })).status, 200)

        yield* post(app, "/v1/recover", { email }, { ip })
        const fresh = linkTokenIn((yield* latestMail(email)).text, "/recover")
        yield* TestClock.adjust(60 * 60_000 - 1)
        const rekeyed = yield* post(app, "/v1/rekey", { token: fresh }, { ip })
        assert.strictEqual(rekeyed.status, 200, JSON.stringify(rekeyed.body))
        assert.strictEqual(rekeyed.body.revoked, 1)
      })
    )

    // Moving the TestClock 90 days would step the server's 5-second housekeeping through every tick,
    // so the token's row is moved to expire one millisecond from now instead.
    it.effect("a management token lives 90 days from its sign-in, and is dead from its expires_at on", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        const ip = freshIp()
        const now = yield* Clock.currentTimeMillis
        const owner = yield* signIn(app, freshEmail("token-life"), { ip })
        assert.strictEqual(Date.parse(owner.expires_at), now + 90 * 24 * 3_600_000)
        const token = owner.management_token
        assert.strictEqual((yield* app.call("/v1/keys", { key: token, ip })).status, 200)
        yield* Effect.orDie(
          sql`UPDATE management_tokens SET expires_at = ${now + 1} WHERE id = ${owner.token_id}`
        )
        assert.strictEqual((yield* app.call("/v1/keys", { key: token, ip })).status, 200)
        yield* TestClock.adjust(1)
        const dead = yield* app.call("/v1/keys", { key: token, ip })
        assert.strictEqual(dead.status, 401)
        assert.strictEqual(dead.body.code, "UNAUTHORIZED")
        assert.strictEqual((yield* app.call("/v1/usage", { key: token, ip })).status, 401)
      })
    )
    it.effect("device flow on the clock: pending, slow_down adds 5 s, approve, deny, expiry", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const signIns = yield* SignIn
        const managementTokens = yield* ManagementTokens
        const ip = freshIp()
        const person = yield* signIn(app, freshEmail("device"), { ip })
        const governor = yield* Effect.orDie(managementTokens.authenticate(person.management_token))
        const start = () =>
          Effect.map(post(app, "/v1/auth/device", {}, { ip }), (reply) => {
            assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
            assert.strictEqual(reply.body.expires_in, 600)
            assert.strictEqual(reply.body.interval, 5)
            assert.strictEqual(
              reply.body.verification_uri_complete,
              `${reply.body.verification_uri}?user_code=${reply.body.user_code}`
            )
            return reply.body as { device_code: string; user_code: string }
          })
        const poll = (deviceCode: string) =>
          post(app, "/v1/auth/device/token", { device_code: deviceCode }, { ip })
        const errorOf = (deviceCode: string) =>
          Effect.map(poll(deviceCode), (reply) => {
            assert.strictEqual(reply.status, 400, JSON.stringify(reply.body))
            return reply.body.error as string
          })

        const approved = yield* start()
        assert.strictEqual(yield* errorOf(approved.device_code), "authorization_pending")
        yield* TestClock.adjust(4_999)
        assert.strictEqual(yield* errorOf(approved.device_code), "slow_down")
        // The interval is now 10 s, counted from the last poll.
        yield* TestClock.adjust(9_999)
        assert.strictEqual(yield* errorOf(approved.device_code), "slow_down")
        yield* TestClock.adjust(15_000)
        assert.strictEqual(yield* errorOf(approved.device_code), "authorization_pending")
        yield* Effect.orDie(signIns.decideDevice(governor, approved.user_code, true))
        yield* TestClock.adjust(15_000)
        const token = yield* poll(approved.device_code)
        assert.strictEqual(token.status, 200, JSON.stringify(token.body))
        assert.strictEqual(token.body.email, person.email)
        assert.strictEqual(
          (yield* app.call("/v1/keys", { key: token.body.management_token, ip })).status,
          200
        )
        yield* TestClock.adjust(15_000)
        assert.strictEqual(yield* errorOf(approved.device_code), "invalid_grant")

        const denied = yield* start()
        yield* Effect.orDie(signIns.decideDevice(governor, denied.user_code, false))
        assert.strictEqual(yield* errorOf(denied.device_code), "access_denied")

        const expiring = yield* start()
        yield* TestClock.adjust("10 minutes")
        assert.strictEqual(yield* errorOf(expiring.device_code), "expired_token")
        // An expired code cannot be approved any more.
        const late = yield* Effect.flip(signIns.decideDevice(governor, expiring.user_code, true))
        assert.strictEqual(late._tag, "InvalidInput")
        assert.strictEqual(yield* errorOf("x".repeat(43)), "invalid_grant")
        assert.strictEqual(yield* errorOf("short"), "invalid_grant")
      })
    )

    it.effect("a loopback exchange code lives 5 minutes", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const signIns = yield* SignIn
        const managementTokens = yield* ManagementTokens
        const ip = freshIp()
        const person = yield* signIn(app, freshEmail("exchange"), { ip })
        const governor = yield* Effect.orDie(managementTokens.authenticate(person.management_token))
        const inTime = yield* Effect.orDie(signIns.exchangeCode(governor))
        const tooLate = yield* Effect.orDie(signIns.exchangeCode(governor))
        yield* TestClock.adjust(5 * 60_000 - 1)
        const ok = yield* post(app, "/v1/auth/exchange", { code: inTime }, { ip })
        assert.strictEqual(ok.status, 200, JSON.stringify(ok.body))
        yield* TestClock.adjust(1)
        const expired = yield* post(app, "/v1/auth/exchange", { code: tooLate }, { ip })
        assert.strictEqual(expired.status, 401)
        assert.strictEqual(expired.body.code, "UNAUTHORIZED")
      })
    )
  })
})
