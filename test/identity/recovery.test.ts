import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Admin } from "../../src/operator/Admin.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { accountRow, mailTo, post, signIn, spend } from "./support.ts"

const freshIp = ipSequence("10.65")

/** The recovery links in the messages to `email`, oldest first. */
const recoveryLinks = (email: string) =>
  Effect.map(mailTo(email), (mails) =>
    mails
      .filter((mail) => mail.kind === "recovery")
      .flatMap((mail) =>
        [...mail.text.matchAll(/\/recover\?token=([0-9A-Za-z]{43})/g)].map((match) => match[1]!)
      )
  )

describe(`recovery and rekey (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("rekey: a new key, every other key revoked; balance, plan and receipts unchanged", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const ip = freshIp()
        const email = "rekey@example.com"
        const minted = yield* app.mint(ip)
        const owner = yield* signIn(app, email, { key: minted.key, ip })
        const token = owner.management_token
        const second = yield* post(app, "/v1/keys", { label: "second" }, { key: token, ip })
        const third = yield* post(app, "/v1/keys", { label: "third" }, { key: token, ip })
        const rotated = yield* post(app, "/v1/keys/rotate", { key_id: third.body.key_id }, { key: token, ip })
        assert.strictEqual(rotated.status, 200)
        yield* Effect.orDie(admin.setPlan(minted.account_id, "flex"))
        yield* Effect.orDie(admin.credit(minted.account_id, 700, "balance", "test purchase"))
        for (const key of [minted.key, second.body.key, rotated.body.key])
          assert.strictEqual((yield* spend(app, key, ip, 3)).status, 200)
        const before = yield* accountRow(minted.account_id)
        const receiptsBefore = (yield* app.call("/v1/receipts", { key: minted.key, ip })).body.receipts
        assert.lengthOf(receiptsBefore, 3)

        const recover = yield* post(app, "/v1/recover", { email }, { ip })
        assert.strictEqual(recover.status, 202)
        const [link] = yield* recoveryLinks(email)
        const rekeyed = yield* post(app, "/v1/rekey", { token: link }, { ip })
        assert.strictEqual(rekeyed.status, 200, JSON.stringify(rekeyed.body))
        assert.strictEqual(rekeyed.body.account_id, minted.account_id)
        // minted, second and the rotation's new key were active; the rotated-away key already was not.
        assert.strictEqual(rekeyed.body.revoked, 3)
        assert.match(rekeyed.body.key, /^svc_/)
        assert.notMatch(rekeyed.body.key, /^svc_trial_/, "a flex account's new key is not a trial key")
        for (const key of [minted.key, second.body.key, third.body.key, rotated.body.key]) {
          const refused = yield* app.call("/v1/usage", { key, ip })
          assert.strictEqual(refused.status, 401)
          assert.strictEqual(refused.body.code, "UNAUTHORIZED")
        }
        assert.deepStrictEqual(yield* accountRow(minted.account_id), before)
        const receiptsAfter = (yield* app.call("/v1/receipts", { key: rekeyed.body.key, ip })).body.receipts
        assert.deepStrictEqual(receiptsAfter, receiptsBefore)
        assert.strictEqual((yield* spend(app, rekeyed.body.key, ip, 3)).status, 200)
        // The management token still governs the account, and lists exactly one active key.
        const listed = yield* app.call("/v1/keys", { key: token, ip })
        assert.deepStrictEqual(
          listed.body.keys.filter((key: any) => key.revoked_at === null).map((key: any) => key.key_id),
          [rekeyed.body.key_id]
        )
        // Reuse and garbage are UNAUTHORIZED, and change nothing.
        for (const bad of [link, "x".repeat(43), "short", ""]) {
          const refused = yield* post(app, "/v1/rekey", { token: bad }, { ip })
          assert.include([400, 401], refused.status, bad)
          if (bad.length === 43) assert.strictEqual(refused.body.code, "UNAUTHORIZED")
        }
        assert.strictEqual((yield* app.call("/v1/usage", { key: rekeyed.body.key, ip })).status, 200)
      })
    )

    it.effect(
      "only claimed accounts get links; an email with two claimed accounts gets one message with a link each",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const email = "two-claimed@example.com"
          const one = yield* app.mint(ip)
          const two = yield* app.mint(ip)
          yield* signIn(app, email, { key: one.key, ip })
          yield* signIn(app, email, { key: two.key, ip: freshIp() })
          // A third account with the key started but never confirmed: not this email's.
          const pending = yield* app.mint(ip)
          yield* post(app, "/v1/auth/email/start", { email: "pending@example.com" }, { key: pending.key, ip })
          yield* post(app, "/v1/recover", { email: "pending@example.com" }, { ip: freshIp() })
          assert.deepStrictEqual(yield* recoveryLinks("pending@example.com"), [])

          yield* post(app, "/v1/recover", { email: email.toUpperCase() }, { ip: freshIp() })
          const links = yield* recoveryLinks(email)
          assert.lengthOf(links, 2)
          assert.lengthOf(
            (yield* mailTo(email)).filter((mail) => mail.kind === "recovery"),
            1,
            "one message carries both links"
          )
          const rekeyed = []
          for (const link of links) {
            const reply = yield* post(app, "/v1/rekey", { token: link }, { ip })
            assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
            assert.strictEqual(reply.body.revoked, 1)
            rekeyed.push(reply.body.account_id)
          }
          assert.deepStrictEqual(rekeyed.sort(), [one.account_id, two.account_id].sort())
          // Rekeying one account leaves the other's key alone (each link names its account).
          assert.strictEqual((yield* app.call("/v1/usage", { key: pending.key, ip })).status, 200)
        })
    )

    it.effect("a suspended account is not re-keyed, and its link survives for after reinstatement", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const ip = freshIp()
        const email = "suspended@example.com"
        const minted = yield* app.mint(ip)
        yield* signIn(app, email, { key: minted.key, ip })
        yield* post(app, "/v1/recover", { email }, { ip })
        const [link] = yield* recoveryLinks(email)
        yield* Effect.orDie(admin.setState(minted.account_id, "suspended"))
        const refused = yield* post(app, "/v1/rekey", { token: link }, { ip })
        assert.strictEqual(refused.status, 401)
        yield* Effect.orDie(admin.setState(minted.account_id, "active"))
        assert.strictEqual((yield* app.call("/v1/usage", { key: minted.key, ip })).status, 200)
        const rekeyed = yield* post(app, "/v1/rekey", { token: link }, { ip })
        assert.strictEqual(rekeyed.status, 200, JSON.stringify(rekeyed.body))
        assert.strictEqual(rekeyed.body.revoked, 1)
      })
    )

    it.effect("two rekeys with one link at once: one new key, one UNAUTHORIZED", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const email = "racing-rekey@example.com"
        const minted = yield* app.mint(ip)
        yield* signIn(app, email, { key: minted.key, ip })
        yield* post(app, "/v1/recover", { email }, { ip })
        const [link] = yield* recoveryLinks(email)
        const replies = yield* Effect.all(
          Array.from({ length: 3 }, () => post(app, "/v1/rekey", { token: link }, { ip })),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(replies.map((reply) => reply.status).sort(), [200, 401, 401])
        const won = replies.find((reply) => reply.status === 200)!
        assert.strictEqual((yield* app.call("/v1/usage", { key: won.body.key, ip })).status, 200)
        const listed = yield* app.call("/v1/keys", {
          key: (yield* signIn(app, email, { ip })).management_token,
          ip
        })
        assert.lengthOf(
          listed.body.keys.filter((key: any) => key.revoked_at === null),
          1
        )
      })
    )
  })
})
