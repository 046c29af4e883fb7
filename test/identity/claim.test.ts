import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Admin } from "../../src/operator/Admin.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { accountRow, codeFor, codeIn, grantFacts, latestMail, post, signIn } from "./support.ts"

const freshIp = ipSequence("10.82")
const form = "application/x-www-form-urlencoded"

/**
 * The audit's unsolicited claim: a sign-in started with a stranger's key for a person's email must
 * not claim the stranger's account for that person when the person finishes it without the key.
 * A claim needs the same spend key at start and at verify.
 */
describe(`a claim needs the key at start and at verify (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "a sign-in started with a stranger's key, finished by the person without it, claims nothing",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const admin = yield* Admin
          const [strangerIp, personIp] = [freshIp(), freshIp()]
          const stranger = yield* app.mint(strangerIp)
          const email = "unsolicited@example.com"
          const { code } = yield* codeFor(app, email, { key: stranger.key, ip: strangerIp })
          // The person types the code from the email into their own sign-in.
          const person = yield* post(app, "/v1/auth/email/verify", { email, code }, { ip: personIp })
          assert.strictEqual(person.status, 200, JSON.stringify(person.body))
          assert.strictEqual(person.body.claimed, null)
          assert.strictEqual(person.body.grant_credits, 0)
          assert.lengthOf(person.body.accounts, 1)
          const own = person.body.accounts[0].account_id
          assert.notStrictEqual(own, stranger.account_id)
          assert.deepStrictEqual(yield* accountRow(stranger.account_id), {
            plan: "trial",
            email: null,
            balance: 0,
            grant: 0,
            claimed: false
          })
          assert.isFalse((yield* grantFacts).grants.some((grant) => grant.account_id === stranger.account_id))
          // The person's later purchase lands on the person's own account; the stranger's key sees none of it.
          yield* Effect.orDie(admin.credit(own, 5_000, "balance", "test purchase"))
          const usage = yield* app.call("/v1/usage", { key: stranger.key, ip: strangerIp })
          assert.strictEqual(usage.status, 200)
          assert.strictEqual(usage.body.account_id, stranger.account_id)
          assert.strictEqual((yield* accountRow(stranger.account_id)).balance, 0)
        })
    )

    it.effect("the same by the emailed link: signed in, nothing claimed", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const strangerIp = freshIp()
        const stranger = yield* app.mint(strangerIp)
        const email = "unsolicited-link@example.com"
        const { token } = yield* codeFor(app, email, { key: stranger.key, ip: strangerIp })
        const person = yield* post(app, "/v1/auth/email/verify", { token }, { ip: freshIp() })
        assert.strictEqual(person.status, 200, JSON.stringify(person.body))
        assert.strictEqual(person.body.claimed, null)
        assert.strictEqual(person.body.grant_credits, 0)
        assert.isFalse((yield* accountRow(stranger.account_id)).claimed)
      })
    )

    it.effect("another key at verify claims neither account and earns no grant; the same key claims", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const started = yield* app.mint(ip)
        const other = yield* app.mint(ip)
        const email = "two-keys-claim@example.com"
        const first = yield* codeFor(app, email, { key: started.key, ip })
        const withOther = yield* post(
          app,
          "/v1/auth/email/verify",
          { email, code: first.code },
          { key: other.key, ip }
        )
        assert.strictEqual(withOther.status, 200, JSON.stringify(withOther.body))
        assert.strictEqual(withOther.body.claimed, null)
        assert.strictEqual(withOther.body.grant_credits, 0)
        assert.isFalse((yield* accountRow(started.account_id)).claimed)
        assert.isFalse((yield* accountRow(other.account_id)).claimed)
        assert.deepStrictEqual(
          (yield* grantFacts).grants.filter((grant) => grant.email === email),
          [],
          "no grant for either key"
        )

        // A bad key as bearer is refused before the code is judged.
        const second = yield* codeFor(app, email, { key: started.key, ip })
        const garbage = yield* post(
          app,
          "/v1/auth/email/verify",
          { email, code: second.code },
          { key: "svc_trial_nope", ip }
        )
        assert.strictEqual(garbage.status, 401)
        assert.strictEqual(garbage.body.code, "UNAUTHORIZED")
        const claimed = yield* post(
          app,
          "/v1/auth/email/verify",
          { email, code: second.code },
          { key: started.key, ip }
        )
        assert.strictEqual(claimed.status, 200, JSON.stringify(claimed.body))
        assert.strictEqual(claimed.body.claimed, started.account_id)
        assert.strictEqual(claimed.body.grant_credits, 10_000)
      })
    )

    it.effect(
      "the link with the key claims; the helper's whole flow (key at start and verify) still does",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const minted = yield* app.mint(ip)
          const email = "link-claim@example.com"
          const { token } = yield* codeFor(app, email, { key: minted.key, ip })
          const byLink = yield* post(app, "/v1/auth/email/verify", { token }, { key: minted.key, ip })
          assert.strictEqual(byLink.status, 200, JSON.stringify(byLink.body))
          assert.strictEqual(byLink.body.claimed, minted.account_id)
          const again = yield* app.mint(ip)
          const viaHelper = yield* signIn(app, "helper-claim@example.com", { key: again.key, ip })
          assert.strictEqual(viaHelper.claimed, again.account_id)
        })
    )

    it.effect(
      "the /claim page carries the key to its code step; the code typed at /login claims nothing",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const minted = yield* app.mint(ip)
          const submit = (path: string, fields: Record<string, string>) =>
            app.call(path, {
              method: "POST",
              headers: { "content-type": form },
              body: new URLSearchParams(fields).toString(),
              ip
            })
          const email = "page-claim@example.com"
          const started = yield* submit("/claim", { key: minted.key, email })
          assert.strictEqual(started.status, 200)
          assert.include(started.body, `name="key" value="${minted.key}"`)
          // The code of the claim's sign-in, typed where no key came along: signed in, nothing claimed.
          const mailCode = codeIn((yield* latestMail(email)).text)
          const withoutKey = yield* submit("/login/code", {
            email,
            code: mailCode,
            claiming: minted.account_id
          })
          assert.strictEqual(withoutKey.status, 200)
          assert.include(withoutKey.body, `Account <code>${minted.account_id}</code> was not claimed`)
          assert.isFalse((yield* accountRow(minted.account_id)).claimed)
          // With the key the page carried, the claim goes through.
          const again = (yield* codeFor(app, email, { key: minted.key, ip })).code
          const withKey = yield* submit("/login/code", {
            email,
            code: again,
            claiming: minted.account_id,
            key: minted.key
          })
          assert.strictEqual(withKey.status, 200)
          assert.include(
            withKey.body,
            `Account <code>${minted.account_id}</code> is now claimed by your email.`
          )
          assert.isTrue((yield* accountRow(minted.account_id)).claimed)
        })
    )
  })
})
