import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { codeIn, latestMail, linkTokenIn, post, signIn } from "./support.ts"

describe(`identity flows (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("claim by sign-in with the key: the grant once, keys, rotate, revoke, alert, recovery", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.61.0.1"
        const minted = yield* app.mint(ip)
        const first = yield* signIn(app, "Owner@Example.com", { key: minted.key, ip })
        assert.strictEqual(first.email, "owner@example.com")
        assert.strictEqual(first.claimed, minted.account_id)
        assert.strictEqual(first.grant_credits, 10_000)
        assert.deepStrictEqual(
          first.accounts.map((a) => [a.account_id, a.grant_credits]),
          [[minted.account_id, 10_000]]
        )
        // Again with the same key: no second grant.
        const second = yield* signIn(app, "owner@example.com", { key: minted.key, ip })
        assert.strictEqual(second.claimed, null)
        assert.strictEqual(second.grant_credits, 0)

        const token = first.management_token
        // A spend key on a management route is AUTH_REQUIRED.
        const bySpendKey = yield* app.call("/v1/keys", { key: minted.key, ip })
        assert.strictEqual(bySpendKey.status, 401)
        assert.strictEqual(bySpendKey.body.code, "AUTH_REQUIRED")

        const listed = yield* app.call("/v1/keys", { key: token, ip })
        assert.strictEqual(listed.status, 200, JSON.stringify(listed.body))
        assert.strictEqual(listed.body.keys.length, 1)
        const keyId = listed.body.keys[0].key_id

        const created = yield* post(app, "/v1/keys", { label: "ci" }, { key: token, ip })
        assert.strictEqual(created.status, 201, JSON.stringify(created.body))
        assert.strictEqual(created.body.grant_credits, 0)

        const rotated = yield* post(app, "/v1/keys/rotate", { key_id: keyId }, { key: token, ip })
        assert.strictEqual(rotated.status, 200, JSON.stringify(rotated.body))
        assert.strictEqual(rotated.body.replaces, keyId)
        const old = yield* app.call("/v1/usage", { key: minted.key, ip })
        assert.strictEqual(old.status, 401)
        const fresh = yield* app.call("/v1/usage", { key: rotated.body.key, ip })
        assert.strictEqual(fresh.status, 200)

        const revoked = yield* post(
          app,
          "/v1/keys/revoke",
          { key_id: created.body.key_id },
          { key: token, ip }
        )
        assert.strictEqual(revoked.status, 200)
        assert.strictEqual((yield* app.call("/v1/usage", { key: created.body.key, ip })).status, 401)
        const unknown = yield* post(app, "/v1/keys/revoke", { key_id: "key_nope" }, { key: token, ip })
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.body.param, "key_id")

        const alert = yield* post(app, "/v1/alert", { threshold: 500 }, { key: token, ip })
        assert.strictEqual(alert.status, 200, JSON.stringify(alert.body))
        assert.strictEqual(alert.body.threshold, 500)

        // The management token spends directly (one account).
        const usage = yield* app.call("/v1/usage", { key: token, ip })
        assert.strictEqual(usage.status, 200, JSON.stringify(usage.body))
        assert.strictEqual(usage.body.account_id, minted.account_id)

        const recover = yield* post(app, "/v1/recover", { email: "owner@example.com" }, { ip })
        assert.strictEqual(recover.status, 202)
        const mail = yield* latestMail("owner@example.com")
        assert.strictEqual(mail.kind, "recovery")
        const rekeyed = yield* post(app, "/v1/rekey", { token: linkTokenIn(mail.text, "/recover") }, { ip })
        assert.strictEqual(rekeyed.status, 200, JSON.stringify(rekeyed.body))
        assert.strictEqual(rekeyed.body.account_id, minted.account_id)
        assert.strictEqual(rekeyed.body.revoked, 1)
        assert.strictEqual((yield* app.call("/v1/usage", { key: rotated.body.key, ip })).status, 401)
        assert.strictEqual((yield* app.call("/v1/usage", { key: rekeyed.body.key, ip })).status, 200)
        const again = yield* post(app, "/v1/rekey", { token: linkTokenIn(mail.text, "/recover") }, { ip })
        assert.strictEqual(again.status, 401)

        const logout = yield* post(app, "/v1/auth/logout", {}, { key: token, ip })
        assert.strictEqual(logout.status, 200, JSON.stringify(logout.body))
        assert.strictEqual((yield* app.call("/v1/keys", { key: token, ip })).status, 401)
      })
    )

    it.effect("a new email gets a trial account without a key; its first key earns the grant", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.61.0.2"
        const signedIn = yield* signIn(app, "new@example.com", { ip })
        assert.strictEqual(signedIn.accounts.length, 1)
        assert.strictEqual(signedIn.grant_credits, 0)
        const created = yield* post(
          app,
          "/v1/keys",
          { label: "first" },
          { key: signedIn.management_token, ip }
        )
        assert.strictEqual(created.status, 201)
        assert.strictEqual(created.body.grant_credits, 10_000)
        const secondKey = yield* post(app, "/v1/keys", {}, { key: signedIn.management_token, ip })
        assert.strictEqual(secondKey.body.grant_credits, 0)
      })
    )

    it.effect("a wrong code counts; the code takes no more tries from an IP after its 5 wrong ones", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.61.0.3"
        yield* post(app, "/v1/auth/email/start", { email: "tries@example.com" }, { ip })
        const code = codeIn((yield* latestMail("tries@example.com")).text)
        const wrong = code === "000000" ? "111111" : "000000"
        for (let i = 0; i < 5; i++) {
          const reply = yield* post(
            app,
            "/v1/auth/email/verify",
            { email: "tries@example.com", code: wrong },
            { ip }
          )
          assert.strictEqual(reply.status, 401)
        }
        const right = yield* post(app, "/v1/auth/email/verify", { email: "tries@example.com", code }, { ip })
        assert.strictEqual(right.status, 401)
      })
    )

    it.effect("device flow: pending, slow_down, approve, token", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.61.0.4"
        const person = yield* signIn(app, "device@example.com", { ip })
        const started = yield* post(app, "/v1/auth/device", {}, { ip })
        assert.strictEqual(started.status, 200, JSON.stringify(started.body))
        const poll = () =>
          post(app, "/v1/auth/device/token", { device_code: started.body.device_code }, { ip })
        const pending = yield* poll()
        assert.strictEqual(pending.status, 400)
        assert.strictEqual(pending.body.error, "authorization_pending")
        const tooFast = yield* poll()
        assert.strictEqual(tooFast.body.error, "slow_down")
        assert.ok(person.management_token.startsWith("svcm_"))
      })
    )
  })
})
