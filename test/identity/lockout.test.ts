import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { codeFor, codeIn, latestMail, linkTokenIn, mailTo, post, signIn } from "./support.ts"

const freshIp = ipSequence("10.81")
let emails = 0
const freshEmail = (what: string) => `${what}-${++emails}@example.com`
const otherCode = (code: string) => (code === "000000" ? "111111" : "000000")

/**
 * The audit's targeted lockout: a stranger who knows a person's email can neither brute-force the
 * person's sign-in code nor keep the person out (of sign-in or recovery) for more than the short
 * per-email window. The server runs on the TestClock, so limit windows move with it.
 */
describe(`a stranger cannot lock the owner out (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000 })((it) => {
    /** The app under test, and a verify from one client IP. */
    const setUp = Effect.map(TestApp, (app) => ({
      app,
      verify: (ip: string, body: unknown) => post(app, "/v1/auth/email/verify", body, { ip })
    }))

    it.effect("wrong guesses from other IPs do not stop the owner's code; each IP has its own 5 tries", () =>
      Effect.gen(function* () {
        const { app, verify } = yield* setUp
        const email = freshEmail("guessed")
        const owner = freshIp()
        const { code } = yield* codeFor(app, email, { ip: owner })
        const wrong = otherCode(code)
        // Four strangers, five wrong guesses each: twice the other IPs' total of 10.
        for (let stranger = 0; stranger < 4; stranger++) {
          const ip = freshIp()
          for (let i = 0; i < 5; i++)
            assert.strictEqual((yield* verify(ip, { email, code: wrong })).status, 401)
          // That IP is done with this code, right or wrong.
          const done = yield* verify(ip, { email, code })
          assert.strictEqual(done.status, 401)
          assert.strictEqual(done.body.code, "UNAUTHORIZED")
          assert.strictEqual(done.body.param, "code")
        }
        // The IP that asked for the code still signs in with it.
        const signedIn = yield* verify(owner, { email, code })
        assert.strictEqual(signedIn.status, 200, JSON.stringify(signedIn.body))
        assert.strictEqual(signedIn.body.email, email)
      })
    )

    it.effect("one stranger's wrong guesses do not stop the code for its owner on a third IP", () =>
      Effect.gen(function* () {
        const { app, verify } = yield* setUp
        const email = freshEmail("elsewhere")
        // Asked for on the phone, typed on the laptop.
        const { code } = yield* codeFor(app, email, { ip: freshIp() })
        const stranger = freshIp()
        for (let i = 0; i < 5; i++)
          assert.strictEqual((yield* verify(stranger, { email, code: otherCode(code) })).status, 401)
        const laptop = yield* verify(freshIp(), { email, code })
        assert.strictEqual(laptop.status, 200, JSON.stringify(laptop.body))
      })
    )

    it.effect(
      "brute force from one IP: RATE_LIMITED after 20 wrong codes across emails, until its window passes",
      () =>
        Effect.gen(function* () {
          const { app, verify } = yield* setUp
          const attacker = freshIp()
          const victims = []
          for (let i = 0; i < 5; i++) {
            const email = freshEmail("victim")
            const owner = freshIp()
            victims.push({ email, owner, code: (yield* codeFor(app, email, { ip: owner })).code })
          }
          // Five wrong guesses at each of four victims' codes: 20, all refused as wrong.
          for (const victim of victims.slice(0, 4))
            for (let i = 0; i < 5; i++) {
              const reply = yield* verify(attacker, { email: victim.email, code: otherCode(victim.code) })
              assert.strictEqual(reply.status, 401)
            }
          // The next try is not even judged, the right code included.
          const fifth = victims[4]!
          const limited = yield* verify(attacker, { email: fifth.email, code: fifth.code })
          assert.strictEqual(limited.status, 429, JSON.stringify(limited.body))
          assert.strictEqual(limited.body.code, "RATE_LIMITED")
          assert.match(limited.headers.get("content-type") ?? "", /problem\+json/)
          assert.isUndefined(limited.body.offer)
          const retry = limited.body.retry_after_seconds
          assert.isTrue(Number.isInteger(retry) && retry >= 1 && retry <= 15 * 60, String(retry))
          assert.strictEqual(limited.headers.get("retry-after"), String(retry))
          // Another IP is not limited by this one: the victims sign in.
          for (const victim of victims) {
            const reply = yield* verify(victim.owner, { email: victim.email, code: victim.code })
            assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
          }
          yield* TestClock.adjust(`${retry} seconds`)
          const later = yield* verify(attacker, { email: fifth.email, code: "123456" })
          assert.strictEqual(later.status, 401, "judged again once the window passed")
        })
    )

    it.effect(
      "strangers' starts from other IPs keep the owner's code alive and hold the owner's own start at most 10 minutes",
      () =>
        Effect.gen(function* () {
          const { app, verify } = yield* setUp
          const email = freshEmail("bombed")
          const owner = freshIp()
          const first = yield* codeFor(app, email, { ip: owner })
          // Two strangers start sign-ins for the owner's email: the email's ceiling (3) is reached.
          for (const ip of [freshIp(), freshIp()])
            assert.strictEqual((yield* post(app, "/v1/auth/email/start", { email }, { ip })).status, 202)
          const held = yield* post(app, "/v1/auth/email/start", { email }, { ip: owner })
          assert.strictEqual(held.status, 429)
          assert.strictEqual(held.body.code, "RATE_LIMITED")
          assert.isUndefined(held.body.offer)
          assert.isTrue(held.body.retry_after_seconds <= 10 * 60, String(held.body.retry_after_seconds))
          // Their starts did not take the owner's live code away.
          const signedIn = yield* verify(owner, { email, code: first.code })
          assert.strictEqual(signedIn.status, 200, JSON.stringify(signedIn.body))

          // Three strangers first: the owner waits out the short window, then signs in.
          const late = freshEmail("bombed")
          const strangers = [freshIp(), freshIp(), freshIp()]
          for (const ip of strangers)
            assert.strictEqual(
              (yield* post(app, "/v1/auth/email/start", { email: late }, { ip })).status,
              202
            )
          const lateOwner = freshIp()
          const wait = yield* post(app, "/v1/auth/email/start", { email: late }, { ip: lateOwner })
          assert.strictEqual(wait.status, 429)
          const retry = wait.body.retry_after_seconds
          assert.isTrue(Number.isInteger(retry) && retry >= 1 && retry <= 10 * 60, String(retry))
          // Meanwhile every message the strangers caused reached the owner, with a link that works.
          const mails = yield* mailTo(late)
          assert.lengthOf(mails, 3)
          const byLink = yield* post(
            app,
            "/v1/auth/email/verify",
            { token: linkTokenIn(mails.at(-1)!.text, "/login") },
            { ip: lateOwner }
          )
          assert.strictEqual(byLink.status, 200, JSON.stringify(byLink.body))
          assert.strictEqual(byLink.body.email, late)
          yield* TestClock.adjust(`${retry} seconds`)
          const again = yield* post(app, "/v1/auth/email/start", { email: late }, { ip: lateOwner })
          assert.strictEqual(again.status, 202, JSON.stringify(again.body))
          const code = codeIn((yield* latestMail(late)).text)
          assert.strictEqual((yield* verify(lateOwner, { email: late, code })).status, 200)
        })
    )

    it.effect(
      "recovery: strangers' requests from other IPs hold the owner's at most 10 minutes; their links reach only the owner",
      () =>
        Effect.gen(function* () {
          const { app } = yield* setUp
          const email = freshEmail("recovering")
          const owner = freshIp()
          const minted = yield* app.mint(owner)
          const claim = yield* signIn(app, email, { key: minted.key, ip: owner })
          assert.strictEqual(claim.claimed, minted.account_id)
          for (const ip of [freshIp(), freshIp(), freshIp()])
            assert.strictEqual((yield* post(app, "/v1/recover", { email }, { ip })).status, 202)
          const held = yield* post(app, "/v1/recover", { email }, { ip: owner })
          assert.strictEqual(held.status, 429)
          assert.strictEqual(held.body.code, "RATE_LIMITED")
          assert.isUndefined(held.body.offer)
          const retry = held.body.retry_after_seconds
          assert.isTrue(Number.isInteger(retry) && retry >= 1 && retry <= 10 * 60, String(retry))
          // The strangers' requests sent their links to the owner's mailbox, where they work.
          const links = (yield* mailTo(email))
            .filter((mail) => mail.kind === "recovery")
            .map((mail) => linkTokenIn(mail.text, "/recover"))
          assert.lengthOf(links, 3)
          const rekeyed = yield* post(app, "/v1/rekey", { token: links[0] }, { ip: owner })
          assert.strictEqual(rekeyed.status, 200, JSON.stringify(rekeyed.body))
          assert.strictEqual(rekeyed.body.account_id, minted.account_id)
          yield* TestClock.adjust(`${retry} seconds`)
          assert.strictEqual((yield* post(app, "/v1/recover", { email }, { ip: owner })).status, 202)
        })
    )
  })
})
